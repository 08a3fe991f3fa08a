/** Escapes text for HTML element and attribute contexts. */
function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} - svc dev engine</title>
<style>
body{font-family:system-ui,sans-serif;background:#f4f4f5;margin:0;padding:48px 16px}
main{max-width:380px;margin:0 auto;background:#fff;border-radius:8px;padding:24px 32px;box-shadow:0 1px 3px rgba(0,0,0,.15)}
label{display:block;margin:12px 0 4px;font-size:14px}input{width:100%;box-sizing:border-box;padding:8px;font-size:15px}
button{margin-top:16px;width:100%;padding:10px;font-size:15px;background:#fd4b2d;color:#fff;border:0;border-radius:4px;cursor:pointer}
.error{color:#b91c1c;background:#fef2f2;padding:8px;border-radius:4px}.muted{color:#71717a;font-size:13px}a{color:#2563eb}
</style>
</head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main><p class="muted" style="text-align:center">svc development engine (Authentik-shaped, in memory)</p></body>
</html>`;
}

export function loginPage(opts: { action: string; email: string; error?: string; socialHref: string; enrollHref: string }): string {
  const error = opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : '';
  return layout(
    'Sign in',
    `${error}<form method="post" action="${escapeHtml(opts.action)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(opts.email)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form>
<p><a href="${escapeHtml(opts.socialHref)}">Continue with Google (dev social source)</a></p>
<p class="muted">No account? <a href="${escapeHtml(opts.enrollHref)}">Sign up</a></p>`,
  );
}

export function enrollmentPage(opts: { action: string; email: string; name: string; error?: string }): string {
  const error = opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : '';
  return layout(
    'Create your account',
    `${error}<form method="post" action="${escapeHtml(opts.action)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(opts.email)}">
<label for="name">Name</label><input id="name" name="name" type="text" autocomplete="name" required value="${escapeHtml(opts.name)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required>
<button type="submit">Sign up</button>
</form>`,
  );
}

export function continuePage(opts: { title: string; description: string; action: string; button: string }): string {
  return layout(
    opts.title,
    `<p>${escapeHtml(opts.description)}</p><form method="post" action="${escapeHtml(opts.action)}"><button type="submit">${escapeHtml(opts.button)}</button></form>`,
  );
}

export function errorPage(message: string): string {
  return layout('Something went wrong', `<p class="error" role="alert">${escapeHtml(message)}</p>`);
}

/** `form` is oidc-provider's own hidden form (id `op.logoutForm`) carrying its xsrf token. */
export function logoutConfirmPage(form: string): string {
  return layout(
    'Sign out of the engine?',
    `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button>`,
  );
}
