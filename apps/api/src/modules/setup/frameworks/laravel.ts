import { type FrameworkSpec, serverVars } from './shared.ts';

const _PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const laravel: FrameworkSpec & { id: 'laravel' } = {
  id: 'laravel',
  name: 'Laravel',
  language: 'PHP',
  oidcLibrary: {
    name: 'Laravel Socialite + kovah/laravel-socialite-oidc (generic OIDC provider)',
    url: 'https://github.com/Kovah/laravel-socialite-oidc',
  },
  installCommand: 'composer require laravel/socialite kovah/laravel-socialite-oidc',
  envLoading: 'Laravel loads .env itself.',
  envFile: '.env',
  envVars: serverVars(),
  devOrigin: 'http://localhost:8000',
  callbackPath: '/auth/callback',
  notes: () => [
    "config/services.php: 'oidc' => ['base_url' => rtrim((string) env('SVC_ISSUER'), '/'), 'client_id' => env('SVC_CLIENT_ID'), 'client_secret' => '', 'redirect' => env('SVC_REDIRECT_URI')]. svc issues no OIDC client secret; use PKCE.",
    "AppServiceProvider::boot(): Event::listen(function (\\SocialiteProviders\\Manager\\SocialiteWasCalled $event) { $event->extendSocialite('oidc', \\SocialiteProviders\\OIDC\\Provider::class); });",
    "routes/web.php: Route::get('/auth/redirect', fn () => Socialite::driver('oidc')->enablePKCE()->redirect()); Route::get('/auth/callback', function () { $user = Socialite::driver('oidc')->enablePKCE()->user(); /* find or create the local user by $user->getId(), Auth::login(...) */ return redirect('/'); }); protect routes with the auth middleware.",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'php artisan serve',
};
