-- A delivery row is updated two or three times in its life (claimed, then recorded). With free
-- space left in each page, the claim (which touches no indexed column) is a HOT update: no new
-- entries in the table's five indexes, less write and vacuum work per delivery.
ALTER TABLE webhook_deliveries SET (fillfactor = 70);
--> statement-breakpoint
ALTER TABLE email_deliveries SET (fillfactor = 70);
