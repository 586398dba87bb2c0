import { useEffect, useState } from "preact/hooks";
import { AdminApi, isRefusedKey, messageOf } from "./adminApi.js";
import { forgetKey, keyForLoginCode, storedKey, storeKey, takeLoginCode } from "./adminSession.js";
import { Dashboard } from "./Dashboard.js";
import { LoginForm } from "./LoginForm.js";

/**
 * Logged out or in. States: `checking` (a key from the session or a login code is being
 * tried) → `in` (the node accepted it) or `out` (no key, or it was refused: the form,
 * with why). A key is stored only once the node accepted it; "log out" forgets it.
 */
type LoginState =
  | { readonly state: "checking" }
  | { readonly state: "out"; readonly message: string | null; readonly busy: boolean }
  | { readonly state: "in"; readonly key: string };

export const REFUSED = "the admin key was refused";

export function App() {
  const [login, setLogin] = useState<LoginState>({ state: "checking" });

  const tryKey = async (key: string): Promise<void> => {
    try {
      await new AdminApi(key).get("status");
      storeKey(key);
      setLogin({ state: "in", key });
    } catch (error) {
      forgetKey();
      setLogin({ state: "out", busy: false, message: isRefusedKey(error) ? REFUSED : `could not check the key: ${messageOf(error)}` });
    }
  };

  useEffect(() => {
    const code = takeLoginCode();
    if (code !== null) {
      keyForLoginCode(code).then(tryKey, (error: unknown) =>
        setLogin({ state: "out", busy: false, message: `the login link did not work (it works once): ${messageOf(error)}` }),
      );
      return;
    }
    const key = storedKey();
    if (key === null) setLogin({ state: "out", busy: false, message: null });
    else void tryKey(key);
  }, []);

  switch (login.state) {
    case "checking":
      return <p class="boot">Checking the admin key…</p>;
    case "out":
      return (
        <LoginForm
          message={login.message}
          busy={login.busy}
          onSubmit={(key) => {
            setLogin({ state: "out", busy: true, message: null });
            void tryKey(key);
          }}
        />
      );
    case "in":
      return (
        <Dashboard
          adminKey={login.key}
          onLogout={() => {
            forgetKey();
            setLogin({ state: "out", busy: false, message: null });
          }}
          onRefused={() => {
            forgetKey();
            setLogin({ state: "out", busy: false, message: REFUSED });
          }}
        />
      );
  }
}
