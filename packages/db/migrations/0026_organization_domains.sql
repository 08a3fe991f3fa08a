CREATE TABLE "organization_domains" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"domain" text NOT NULL,
	"verification_token" text NOT NULL,
	"verified_at" timestamp (3) with time zone,
	"last_checked_at" timestamp (3) with time zone,
	"last_check_error" text,
	"policy" text DEFAULT 'none' NOT NULL,
	"auto_join_role_key" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "organization_domains" ADD CONSTRAINT "organization_domains_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "organization_domains_tenant_domain_key" ON "organization_domains" USING btree ("tenant_id","domain");--> statement-breakpoint
CREATE INDEX "organization_domains_tenant_created_idx" ON "organization_domains" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "organization_domains_verified_domain_key" ON "organization_domains" USING btree ("domain") WHERE "organization_domains"."verified_at" is not null;