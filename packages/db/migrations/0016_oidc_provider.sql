CREATE TABLE "oidc_payloads" (
	"model" text NOT NULL,
	"id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"grant_id" text,
	"uid" text,
	"user_code" text,
	"expires_at" timestamp with time zone,
	"consumed_at" timestamp with time zone,
	CONSTRAINT "oidc_payloads_model_id_pk" PRIMARY KEY("model","id")
);
--> statement-breakpoint
CREATE TABLE "oidc_signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"alg" text NOT NULL,
	"private_key_ciphertext" text NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"superseded_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE INDEX "oidc_payloads_uid_idx" ON "oidc_payloads" USING btree ("model","uid") WHERE "oidc_payloads"."uid" is not null;--> statement-breakpoint
CREATE INDEX "oidc_payloads_user_code_idx" ON "oidc_payloads" USING btree ("model","user_code") WHERE "oidc_payloads"."user_code" is not null;--> statement-breakpoint
CREATE INDEX "oidc_payloads_grant_idx" ON "oidc_payloads" USING btree ("grant_id") WHERE "oidc_payloads"."grant_id" is not null;--> statement-breakpoint
CREATE INDEX "oidc_payloads_expires_idx" ON "oidc_payloads" USING btree ("expires_at") WHERE "oidc_payloads"."expires_at" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "oidc_signing_keys_one_current_key" ON "oidc_signing_keys" USING btree (("superseded_at" is null)) WHERE "oidc_signing_keys"."superseded_at" is null;