CREATE TABLE "scim_directories" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"token_prefix" text NOT NULL,
	"default_role_key" text DEFAULT 'org_member' NOT NULL,
	"group_roles" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_by_user_id" text,
	"last_request_at" timestamp (3) with time zone,
	"token_rotated_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scim_group_members" (
	"tenant_id" text NOT NULL,
	"group_id" text NOT NULL,
	"scim_user_id" text NOT NULL,
	CONSTRAINT "scim_group_members_group_id_scim_user_id_pk" PRIMARY KEY("group_id","scim_user_id")
);
--> statement-breakpoint
CREATE TABLE "scim_groups" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"directory_id" text NOT NULL,
	"display_name" text NOT NULL,
	"external_id" text,
	"version" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scim_request_log" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "scim_request_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tenant_id" text NOT NULL,
	"directory_id" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"status" smallint NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scim_users" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"directory_id" text NOT NULL,
	"user_id" text NOT NULL,
	"user_name" text NOT NULL,
	"external_id" text,
	"display_name" text,
	"given_name" text,
	"family_name" text,
	"email" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"version" bigint DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "scim_directories" ADD CONSTRAINT "scim_directories_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_group_members" ADD CONSTRAINT "scim_group_members_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_group_members" ADD CONSTRAINT "scim_group_members_group_id_scim_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."scim_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_group_members" ADD CONSTRAINT "scim_group_members_scim_user_id_scim_users_id_fk" FOREIGN KEY ("scim_user_id") REFERENCES "public"."scim_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_groups" ADD CONSTRAINT "scim_groups_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_groups" ADD CONSTRAINT "scim_groups_directory_id_scim_directories_id_fk" FOREIGN KEY ("directory_id") REFERENCES "public"."scim_directories"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_request_log" ADD CONSTRAINT "scim_request_log_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_request_log" ADD CONSTRAINT "scim_request_log_directory_id_scim_directories_id_fk" FOREIGN KEY ("directory_id") REFERENCES "public"."scim_directories"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_users" ADD CONSTRAINT "scim_users_tenant_id_organizations_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_users" ADD CONSTRAINT "scim_users_directory_id_scim_directories_id_fk" FOREIGN KEY ("directory_id") REFERENCES "public"."scim_directories"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_users" ADD CONSTRAINT "scim_users_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "scim_directories_token_hash_key" ON "scim_directories" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "scim_directories_tenant_created_idx" ON "scim_directories" USING btree ("tenant_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "scim_group_members_user_idx" ON "scim_group_members" USING btree ("scim_user_id");--> statement-breakpoint
CREATE INDEX "scim_groups_directory_display_name_idx" ON "scim_groups" USING btree ("directory_id",lower("display_name"));--> statement-breakpoint
CREATE UNIQUE INDEX "scim_groups_directory_external_id_key" ON "scim_groups" USING btree ("directory_id","external_id") WHERE "scim_groups"."external_id" is not null;--> statement-breakpoint
CREATE INDEX "scim_groups_directory_created_idx" ON "scim_groups" USING btree ("directory_id","created_at","id");--> statement-breakpoint
CREATE INDEX "scim_request_log_directory_idx" ON "scim_request_log" USING btree ("directory_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "scim_users_directory_user_name_key" ON "scim_users" USING btree ("directory_id",lower("user_name"));--> statement-breakpoint
CREATE UNIQUE INDEX "scim_users_directory_external_id_key" ON "scim_users" USING btree ("directory_id","external_id") WHERE "scim_users"."external_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "scim_users_tenant_user_key" ON "scim_users" USING btree ("tenant_id","user_id");--> statement-breakpoint
CREATE INDEX "scim_users_directory_created_idx" ON "scim_users" USING btree ("directory_id","created_at","id");--> statement-breakpoint
CREATE INDEX "scim_users_directory_email_idx" ON "scim_users" USING btree ("directory_id","email");--> statement-breakpoint
CREATE INDEX "scim_users_user_idx" ON "scim_users" USING btree ("user_id");