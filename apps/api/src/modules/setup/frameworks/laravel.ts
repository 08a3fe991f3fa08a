import { type FrameworkSpec, permissionLiteral, serverVars } from './shared.ts';

/**
 * Laravel with Socialite's generic OIDC provider and firebase/php-jwt. Not runnable on svc's test
 * machines (no PHP toolchain is packaged for them); its values are asserted by the setup unit tests.
 */
export const laravel: FrameworkSpec & { id: 'laravel' } = {
  id: 'laravel',
  name: 'Laravel',
  language: 'PHP',
  oidcLibrary: {
    name: 'Laravel Socialite 5 + socialiteproviders/oidc 4 (generic OIDC provider) + firebase/php-jwt 6',
    url: 'https://socialiteproviders.com/OIDC/',
  },
  installCommand: 'composer require laravel/socialite:^5 socialiteproviders/oidc:^4 firebase/php-jwt:^6',
  envLoading: 'Laravel loads .env itself; read the values through config/services.php.',
  envFile: '.env',
  envVars: serverVars(),
  devOrigin: 'http://localhost:8000',
  meRoute: '/api/me',
  callbackPath: '/auth/callback',
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'php artisan serve --port=8000',
  notes: (v) => [
    "Before sign-in starts, a page opened on another host than SVC_REDIRECT_URI's (the 127.0.0.1 the server prints, for localhost) redirects (307) to the same path and query on SVC_REDIRECT_URI's origin, built from that origin and the request path only, never the Host header: svc comes back to that host, and the sign-in state lives in a cookie of the host the browser used. /api/me answers on any host.",
    `config/services.php: 'svc' => ['base_url' => rtrim((string) env('SVC_ISSUER'), '/'), 'client_id' => env('SVC_CLIENT_ID'), 'client_secret' => env('SVC_SECRET_KEY') ?: null, 'redirect' => env('SVC_REDIRECT_URI'), 'post_logout_redirect_uri' => env('SVC_POST_LOGOUT_REDIRECT_URI'), 'checked_permission' => ${permissionLiteral(v)}]. The secret key is the client secret of a confidential application; while it is empty (keyless, public client) PKCE alone proves the client. checked_permission is the product permission the app checks (see "Roles and permissions" in this context).`,
    "AppServiceProvider::boot(): Event::listen(function (\\SocialiteProviders\\Manager\\SocialiteWasCalled $event) { $event->extendSocialite('svc', \\SocialiteProviders\\OIDC\\Provider::class); }); (socialiteproviders/oidc reads discovery from base_url).",
    "routes/web.php: Route::get('/login', fn () => Socialite::driver('svc')->scopes(['openid', 'email', 'profile', 'organization'])->enablePKCE()->redirect()); Route::get('/auth/callback', function () { $user = Socialite::driver('svc')->enablePKCE()->user(); session(['user' => ['sub' => $user->getId(), 'email' => $user->getEmail(), 'org_id' => $user->user['org_id'] ?? null, 'org_slug' => $user->user['org_slug'] ?? null, 'org_role' => $user->user['org_role'] ?? null, 'permissions' => $user->user['permissions'] ?? []], 'id_token' => $user->accessTokenResponseBody['id_token'] ?? null]); return redirect('/profile'); }); /profile redirects to /login without session('user') and renders, with {{ }} (escaped), email, org_slug, org_role (the product role), the product permissions (implode(' ', session('user.permissions')) ?: 'none yet') and whether the person holds the checked permission: in_array(config('services.svc.checked_permission'), session('user.permissions'), true) ? 'yes' : 'no'.",
    "Sign-out through svc's end-session endpoint: Route::get('/logout', function () { $idToken = session('id_token'); session()->invalidate(); $end = Http::get(rtrim(env('SVC_ISSUER'), '/').'/.well-known/openid-configuration')->json('end_session_endpoint'); return redirect()->away($end.'?'.http_build_query(['id_token_hint' => $idToken, 'post_logout_redirect_uri' => config('services.svc.post_logout_redirect_uri')])); });",
    "Verify svc's access tokens (RFC 9068 JWTs) in an /api/me route with firebase/php-jwt against the JWKS (cache it): $keys = \\Firebase\\JWT\\JWK::parseKeySet(Http::get($discovery['jwks_uri'])->json()); $claims = \\Firebase\\JWT\\JWT::decode($token, $keys); then require $claims->iss === env('SVC_ISSUER'), in_array(env('SVC_CLIENT_ID'), (array) $claims->aud), and the header typ at+jwt; answer 401 on any failure. Then answer the role and one permission check: $permissions = (array) ($claims->permissions ?? []); return response()->json(['sub' => $claims->sub, 'org_id' => $claims->org_id ?? null, 'org_slug' => $claims->org_slug ?? null, 'org_role' => $claims->org_role ?? null, 'permissions' => $permissions, 'check' => ['permission' => config('services.svc.checked_permission'), 'allowed' => in_array(config('services.svc.checked_permission'), $permissions, true)]]); a route that requires the permission answers 403 when allowed is false.",
    'Development allowance: http for SVC_ISSUER only when its host is localhost or 127.0.0.1 (svc on this machine); a deployed svc is https.',
  ],
};
