-- previous release: compatible (replaces a 0018 trigger function a 0.2.0 node never names; the pg_notify it adds is a wakeup hint a 0.2.0 node on the postgres coordinator reads as any work hint, ignoring the field it does not know)
--
-- pawl 0022: a parent parked in ctx.waitFor that its last child's end makes runnable gets a wakeup hint
-- (docs/durable.md). Without one, nodes found it at their next discovery pass; now the statement that
-- ended the child, on whichever node of whichever release, also sends the hint of a released job on the
-- schema's postgres wakeup channel (the wire format of coordinators/hint-codec.ts, as the SQL enqueue()
-- sends its own), delivered at that statement's commit and never after a rollback. Nodes on another
-- transport still find the parent at their next discovery pass.
-- {{schema}} is replaced by the escaped schema name; the runner applies this inside one transaction.
--
-- The body is 0018's, with the hint after the wake.
CREATE OR REPLACE FUNCTION {{schema}}.pawl_durable_child_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  parent {{schema}}.scheduler_job_queue%ROWTYPE;
  awaited bigint[];
BEGIN
  SELECT * INTO parent FROM {{schema}}.scheduler_job_queue
  WHERE id = OLD.parent_job_id FOR NO KEY UPDATE;
  IF NOT FOUND OR parent.status <> 'WAITING' OR parent.signal_state IS DISTINCT FROM 'waiting' THEN
    RETURN NULL;
  END IF;
  SELECT s.children INTO awaited FROM {{schema}}.scheduler_job_step s
  WHERE s.job_id = parent.id AND s.kind = 'wait' AND s.status = 'waiting'
  ORDER BY s.started_at DESC LIMIT 1;
  IF awaited IS NULL OR NOT (OLD.id = ANY(awaited)) THEN
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM {{schema}}.scheduler_job_queue c WHERE c.id = ANY(awaited)) THEN
    RETURN NULL;
  END IF;
  PERFORM {{schema}}.pawl_durable_wake(parent.id);
  -- Only a parent the wake made claimable (not one a pause holds, or one left parked for its unique key).
  IF EXISTS (SELECT 1 FROM {{schema}}.scheduler_job_queue WHERE id = parent.id AND status = 'PENDING') THEN
    PERFORM pg_notify({{schema}}.pawl_wakeup_channel(btrim('{{schema}}', '"')), format(
      '{"pawl":1,"kind":"work","priority":%s,"source":"sql","target":%s,"released":true}',
      parent.priority, to_json(parent.type)::text));
  END IF;
  RETURN NULL;
END
$$;
