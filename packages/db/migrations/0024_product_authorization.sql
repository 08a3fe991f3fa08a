CREATE TABLE "api_permissions" (
	"id" text PRIMARY KEY NOT NULL,
	"resource_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "api_permissions_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "api_resources" (
	"id" text PRIMARY KEY NOT NULL,
	"identifier" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "api_resources_identifier_unique" UNIQUE("identifier")
);
--> statement-breakpoint
CREATE TABLE "product_roles" (
	"id" text PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"permissions" text[] DEFAULT '{}'::text[] NOT NULL,
	"builtin" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "product_roles_key_unique" UNIQUE("key"),
	CONSTRAINT "product_roles_builtin_key_check" CHECK (not "product_roles"."builtin" or "product_roles"."key" in ('org_admin', 'org_member'))
);
--> statement-breakpoint
ALTER TABLE "applications" DROP CONSTRAINT "applications_client_type_check";--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "token_endpoint_auth_method" text;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "jwks" jsonb;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "jwks_uri" text;--> statement-breakpoint
ALTER TABLE "applications" ADD COLUMN "machine_permissions" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "roles" ADD COLUMN "product_permissions" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "subscription_plans" ADD COLUMN "features" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "api_permissions" ADD CONSTRAINT "api_permissions_resource_id_api_resources_id_fk" FOREIGN KEY ("resource_id") REFERENCES "public"."api_resources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_permissions_resource_idx" ON "api_permissions" USING btree ("resource_id","name");--> statement-breakpoint
ALTER TABLE "applications" ADD CONSTRAINT "applications_token_endpoint_auth_method_check" CHECK ("applications"."token_endpoint_auth_method" is null or "applications"."token_endpoint_auth_method" in ('client_secret_basic', 'private_key_jwt'));--> statement-breakpoint
ALTER TABLE "applications" ADD CONSTRAINT "applications_jwks_uri_check" CHECK ("applications"."jwks_uri" is null or ("applications"."jwks_uri" like 'https://%' and length("applications"."jwks_uri") <= 2048));--> statement-breakpoint
ALTER TABLE "applications" ADD CONSTRAINT "applications_client_type_check" CHECK ("applications"."client_type" in ('confidential', 'public', 'machine'));--> statement-breakpoint
-- The built-in roles' product permissions: one row each, none at first.
INSERT INTO "product_roles" ("id", "key", "name", "builtin") VALUES
  ('prl_org_admin', 'org_admin', 'Organization admin', true),
  ('prl_org_member', 'org_member', 'Organization member', true)
  ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- What a person may do is cached per process (the permission check, modules/authorization): a
-- change to a membership or a user names that user; a change to roles, the product's catalog or
-- an organization's subscription drops every entry ('*'). Each API process LISTENs.
CREATE OR REPLACE FUNCTION svc_notify_access_changed() RETURNS trigger AS $$
BEGIN
  IF TG_LEVEL = 'ROW' THEN
    IF TG_OP = 'DELETE' THEN
      PERFORM pg_notify('svc_access_changed', 'u:' || OLD.user_id);
    ELSE
      PERFORM pg_notify('svc_access_changed', 'u:' || NEW.user_id);
    END IF;
  ELSE
    PERFORM pg_notify('svc_access_changed', '*');
  END IF;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION svc_notify_user_access_changed() RETURNS trigger AS $$
BEGIN
  IF OLD.status IS DISTINCT FROM NEW.status THEN
    PERFORM pg_notify('svc_access_changed', 'u:' || NEW.id);
  END IF;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER memberships_access_changed AFTER INSERT OR UPDATE OR DELETE ON "memberships"
  FOR EACH ROW EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER users_access_changed AFTER UPDATE ON "users"
  FOR EACH ROW EXECUTE FUNCTION svc_notify_user_access_changed();
--> statement-breakpoint
CREATE TRIGGER roles_access_changed AFTER INSERT OR UPDATE OR DELETE ON "roles"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER product_roles_access_changed AFTER INSERT OR UPDATE OR DELETE ON "product_roles"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER api_permissions_access_changed AFTER INSERT OR UPDATE OR DELETE ON "api_permissions"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER api_resources_access_changed AFTER INSERT OR UPDATE OR DELETE ON "api_resources"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER subscriptions_access_changed AFTER INSERT OR UPDATE OR DELETE ON "subscriptions"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
--> statement-breakpoint
CREATE TRIGGER subscription_plans_access_changed AFTER INSERT OR UPDATE OR DELETE ON "subscription_plans"
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_access_changed();
