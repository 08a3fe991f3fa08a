CREATE TABLE "setup_links" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"purpose" text NOT NULL,
	"label" text NOT NULL,
	"token_hash" text NOT NULL,
	"session_hash" text,
	"target_id" text,
	"created_by_user_id" text NOT NULL,
	"created_by_label" text,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"opened_at" timestamp (3) with time zone,
	"revoked_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "setup_links" ADD CONSTRAINT "setup_links_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "setup_links_token_hash_key" ON "setup_links" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "setup_links_tenant_created_idx" ON "setup_links" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);