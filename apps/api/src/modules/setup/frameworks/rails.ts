import { type FrameworkSpec, permissionLiteral, serverVars } from './shared.ts';

/**
 * Rails with omniauth_openid_connect. Not runnable on svc's test machines (no Ruby toolchain is
 * packaged for them); its values are asserted by the setup unit tests.
 */
export const rails: FrameworkSpec & { id: 'rails' } = {
  id: 'rails',
  name: 'Ruby on Rails',
  language: 'Ruby',
  oidcLibrary: { name: 'omniauth_openid_connect 0.8 + jwt 2', url: 'https://github.com/omniauth/omniauth_openid_connect' },
  installCommand:
    'bundle add omniauth_openid_connect --version "~> 0.8" && bundle add omniauth-rails_csrf_protection --version "~> 1.0" && bundle add jwt --version "~> 2.8" && bundle add dotenv --version "~> 3.1"',
  envLoading: 'The dotenv gem (3.x) loads .env into ENV when Rails boots.',
  envFile: '.env',
  envVars: serverVars(),
  devOrigin: 'http://localhost:3000',
  meRoute: '/api/me',
  callbackPath: '/auth/svc/callback',
  postLogoutPath: '/',
  files: () => [],
  runCommand: 'bin/rails server -p 3000',
  notes: (v) => [
    "Before sign-in starts, a page opened on another host than SVC_REDIRECT_URI's (the 127.0.0.1 the server prints, for localhost) redirects (307) to the same path and query on SVC_REDIRECT_URI's origin, built from that origin and the request path only, never the Host header: svc comes back to that host, and the sign-in state lives in a cookie of the host the browser used. /api/me answers on any host.",
    "config/initializers/omniauth.rb: Rails.application.config.middleware.use OmniAuth::Builder do provider :openid_connect, name: :svc, issuer: ENV.fetch('SVC_ISSUER'), discovery: true, scope: [:openid, :email, :profile, :organization], response_type: :code, pkce: true, uid_field: 'sub', client_options: { identifier: ENV.fetch('SVC_CLIENT_ID'), secret: ENV['SVC_SECRET_KEY'].presence, redirect_uri: ENV.fetch('SVC_REDIRECT_URI') } end. With SVC_SECRET_KEY set the gem authenticates with HTTP Basic (client_secret_basic); while it is empty (keyless, public client) PKCE alone proves the client.",
    "Development allowance, in the same initializer before the provider: if URI(ENV.fetch('SVC_ISSUER')).scheme == 'http' then raise unless %w[localhost 127.0.0.1].include?(URI(ENV.fetch('SVC_ISSUER')).host); SWD.url_builder = URI::HTTP end (discovery over http for an svc on this machine only; a deployed svc is https).",
    `app/controllers/application_controller.rb, inside class ApplicationController (SessionsController and ApiController inherit from it): CHECKED_PERMISSION = ${permissionLiteral(v)}, the product permission the app checks (see "Roles and permissions" in this context).`,
    "config/routes.rb: get '/auth/svc/callback', to: 'sessions#create'; get '/profile', to: 'sessions#show'; get '/logout', to: 'sessions#destroy'; get '/api/me', to: 'api#me'. Sign in with a POST (OmniAuth 2 rejects GET): button_to 'Sign in', '/auth/svc', method: :post, data: { turbo: false }.",
    "SessionsController#create: auth = request.env['omniauth.auth']; raw = auth.extra.raw_info; session[:user] = { 'sub' => auth.uid, 'email' => raw['email'], 'org_id' => raw['org_id'], 'org_slug' => raw['org_slug'], 'org_role' => raw['org_role'], 'permissions' => raw['permissions'] || [] }; session[:id_token] = auth.credentials.id_token; redirect_to '/profile'. #show redirects to '/' unless session[:user] and renders (ERB escapes them) email, org_slug, org_role (the product role), the product permissions (session[:user]['permissions'].join(' ').presence || 'none yet') and whether the person holds the checked permission (session[:user]['permissions'].include?(CHECKED_PERMISSION) ? 'yes' : 'no').",
    "SessionsController#destroy (sign-out through svc's end-session endpoint): id_token = session.delete(:id_token); reset_session; end_session = JSON.parse(Net::HTTP.get(URI(\"#{ENV.fetch('SVC_ISSUER')}/.well-known/openid-configuration\")))['end_session_endpoint']; redirect_to \"#{end_session}?#{{ id_token_hint: id_token, post_logout_redirect_uri: ENV.fetch('SVC_POST_LOGOUT_REDIRECT_URI') }.to_query}\", allow_other_host: true.",
    "ApiController#me (verifies svc's access tokens, RFC 9068 JWTs, against the JWKS; cache the key set): jwks = JWT::JWK::Set.new(JSON.parse(Net::HTTP.get(URI(discovery['jwks_uri'])))); payload, header = JWT.decode(token, nil, true, algorithms: %w[RS256 ES256], jwks: jwks, iss: ENV.fetch('SVC_ISSUER'), verify_iss: true, aud: ENV.fetch('SVC_CLIENT_ID'), verify_aud: true); return head :unauthorized unless header['typ'].to_s.downcase.delete_prefix('application/') == 'at+jwt'; permissions = Array(payload['permissions']); render json: payload.slice('sub', 'org_id', 'org_slug', 'org_role').merge('permissions' => permissions, 'check' => { 'permission' => CHECKED_PERMISSION, 'allowed' => permissions.include?(CHECKED_PERMISSION) }); rescue JWT::DecodeError -> head :unauthorized. A route that requires the permission answers 403 when allowed is false.",
  ],
};
