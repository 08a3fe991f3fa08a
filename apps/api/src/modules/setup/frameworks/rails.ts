import { type FrameworkSpec, serverVars } from './shared.ts';

const _PUBLIC_CLIENT =
  'svc issues no OIDC client secret: configure the library as a public client (authorization code flow with PKCE S256, token endpoint auth method "none").';

export const rails: FrameworkSpec & { id: 'rails' } = {
  id: 'rails',
  name: 'Ruby on Rails',
  language: 'Ruby',
  oidcLibrary: { name: 'omniauth_openid_connect', url: 'https://github.com/omniauth/omniauth_openid_connect' },
  installCommand: 'bundle add omniauth_openid_connect omniauth-rails_csrf_protection',
  envLoading: 'dotenv-rails loads .env in development.',
  envFile: '.env',
  envVars: serverVars(),
  devOrigin: 'http://localhost:3000',
  callbackPath: '/auth/svc/callback',
  notes: () => [
    "config/initializers/omniauth.rb: Rails.application.config.middleware.use OmniAuth::Builder do provider :openid_connect, name: :svc, issuer: ENV.fetch('SVC_ISSUER'), discovery: true, scope: [:openid, :email, :profile], response_type: :code, pkce: true, client_options: { identifier: ENV.fetch('SVC_CLIENT_ID'), redirect_uri: ENV.fetch('SVC_REDIRECT_URI') } end. svc issues no OIDC client secret, so none is set.",
    "config/routes.rb: get '/auth/svc/callback', to: 'sessions#create'; SessionsController#create reads request.env['omniauth.auth'] (uid, info.email), finds or creates the user, sets session[:user_id] and redirects home.",
    "Sign in with a POST (OmniAuth 2 rejects GET): button_to 'Sign in', '/auth/svc', method: :post, data: { turbo: false }.",
  ],
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'bin/rails server',
};
