/** Hosted sign-in, coming back to where the browser is now (the api sanitizes return_to). */
export function signInHref(): string {
  const returnTo = `${window.location.pathname}${window.location.search}${window.location.hash}`;
  return `/signin?return_to=${encodeURIComponent(returnTo)}`;
}

let leaving = false;

/**
 * The session ended while the page was open (signed out in another tab, revoked, expired): go to
 * hosted sign-in, which brings the user back here. `replace`, so Back does not return to a console
 * that can no longer load anything. Many failing queries trigger this; the first one navigates.
 */
export function redirectToSignIn(): void {
  if (leaving) {
    return;
  }
  leaving = true;
  window.location.replace(signInHref());
}
