CREATE TABLE "third_party_access" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"mode" text NOT NULL,
	"clients" text[] DEFAULT '{}' NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "third_party_access" ADD CONSTRAINT "third_party_access_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;