import { useState } from "preact/hooks";

interface LoginFormProps {
  readonly message: string | null;
  readonly busy: boolean;
  readonly onSubmit: (key: string) => void;
}

/** Asks for the admin key (a password field: not shown, not autocompleted into other sites). */
export function LoginForm({ message, busy, onSubmit }: LoginFormProps) {
  const [key, setKey] = useState("");
  return (
    <main class="login">
      <form
        class="card"
        data-testid="login-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim() !== "") onSubmit(key.trim());
        }}
      >
        <h1>Cairn dashboard</h1>
        <p class="muted">This node's admin key (CAIRN_ADMIN_KEY). It is kept for this tab only.</p>
        <label>
          Admin key
          <input
            type="password"
            name="admin-key"
            autocomplete="current-password"
            data-testid="admin-key"
            value={key}
            onInput={(event) => setKey(event.currentTarget.value)}
            autoFocus
          />
        </label>
        <button class="primary" type="submit" disabled={busy || key.trim() === ""} data-testid="login">
          {busy ? "Checking…" : "Log in"}
        </button>
        {message !== null && (
          <p class="error" role="alert" data-testid="login-error">
            {message}
          </p>
        )}
      </form>
    </main>
  );
}
