import { createContext, createElement, useContext, type ReactElement, type ReactNode } from "react";
import { invalidArgument } from "../base/index.js";
import type { CairnClient } from "../client/index.js";

/**
 * The client the hooks of a component tree use. One client per app, made once outside
 * React (it owns a WebSocket and reconnects by itself), and closed by the app when it is
 * done with it: the provider neither makes nor closes it.
 */
const CairnContext = createContext<CairnClient | null>(null);

export interface CairnProviderProps {
  readonly client: CairnClient;
  readonly children?: ReactNode;
}

/** Gives `client` to every hook below it: `<CairnProvider client={client}><App /></CairnProvider>`. */
export function CairnProvider({ client, children }: CairnProviderProps): ReactElement {
  return createElement(CairnContext.Provider, { value: client }, children);
}

/** The client of the nearest CairnProvider; INVALID_ARGUMENT outside one (a mistake in the component tree). */
export function useCairnClient(): CairnClient {
  const client = useContext(CairnContext);
  if (client === null) throw invalidArgument("a Cairn hook was used outside a <CairnProvider client={…}>");
  return client;
}
