import type { CairnClient, CairnError, QueryReference, ResultOf } from "../client/index.js";
import { LOADING, type QueryState } from "./QueryState.js";

/**
 * One query with fixed arguments as an external store for `useSyncExternalStore`: each
 * React subscriber is one client subscription (the client shares the server query among
 * equal ones), and the snapshot is the latest state, the same object until it changes.
 * It outlives its subscribers' comings and goings (React's strict mode subscribes twice):
 * a subscriber that returns sees the last state until the client re-delivers it.
 */
export class QuerySubscription<Ref extends QueryReference> {
  private state: QueryState<ResultOf<Ref>> = LOADING;

  constructor(
    private readonly client: CairnClient,
    private readonly ref: Ref,
    private readonly args: unknown,
  ) {}

  readonly subscribe = (onChange: () => void): (() => void) => {
    const update = (state: QueryState<ResultOf<Ref>>) => {
      this.state = state;
      onChange();
    };
    try {
      return this.client.subscribe(
        this.ref,
        this.args as never,
        (value) => update({ status: "success", value }),
        (error) => update({ status: "error", error }),
      );
    } catch (error) {
      // Arguments the client refuses (not values, too large) or a closed client: CairnErrors, shown as the query's error.
      update({ status: "error", error: error as CairnError });
      return () => {};
    }
  };

  readonly getSnapshot = (): QueryState<ResultOf<Ref>> => this.state;
}
