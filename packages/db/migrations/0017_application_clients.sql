-- Applications become OpenID Connect clients with their own logout settings. Every application
-- that exists already keeps working as before: the defaults make it a confidential client (it
-- authenticates with the secret key it already has) that anyone may sign in to, with no
-- post-logout URLs and no back-channel logout URL. Adding columns with constant defaults
-- rewrites no row; the applications change trigger is not fired.
ALTER TABLE "applications" ADD COLUMN "post_logout_redirect_urls" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "backchannel_logout_url" text;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "client_type" text DEFAULT 'confidential' NOT NULL;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "sign_in_audience" text DEFAULT 'anyone' NOT NULL;--> statement-breakpoint
ALTER TABLE "applications" ADD CONSTRAINT "applications_client_type_check" CHECK ("applications"."client_type" in ('confidential', 'public'));--> statement-breakpoint
ALTER TABLE "applications" ADD CONSTRAINT "applications_sign_in_audience_check" CHECK ("applications"."sign_in_audience" in ('anyone', 'members'));