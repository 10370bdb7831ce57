/**
 * The node's known due times (src/logic/due-times.ts) and where they come from: this node's own delayed
 * writes. A retry, snooze or other hand-back with a delay is noted once its write has landed, as
 * `now + delay` (the database set `scheduled_time = now() + delay` before that, so on one host the note is
 * never early); a delayed enqueue of a type the node runs is noted by Pawl from the row's scheduled time.
 * Each note tells the poller (`DUE`), which cuts its wait short; the claim at that time takes the due
 * entries and passes their levels to the claimer.
 */
import type { AnyActorRef } from "xstate";
import type { Clock } from "../../core/clock.js";
import { addDue, nextDueAt, takeDue, type DueEntry } from "../../logic/due-times.js";
import type { OutcomeSink } from "../../store/outcomes/outcome-sink.js";

/** A row of `priority` that comes due `inMs` from now. */
export interface DueRow {
  priority: number;
  inMs: number;
}

/** What the notes need from the runtime. */
export interface DueNotesDeps {
  clock: Clock;
  /** The poller, told of each new due time. */
  poller: () => AnyActorRef | undefined;
  /** False once the node drains: nothing is noted then. */
  active: () => boolean;
}

/** The due times one node knows of. */
export class DueNotes {
  private list: readonly DueEntry[] = [];

  constructor(private readonly deps: DueNotesDeps) {}

  /** Notes rows that come due later (rows due already are skipped) and tells the poller the earliest. */
  note(rows: readonly DueRow[]): void {
    if (!this.deps.active()) return;
    const now = this.deps.clock.now();
    const entries = rows.filter((r) => r.inMs > 0).map((r) => ({ at: now + r.inMs, priority: r.priority }));
    if (entries.length === 0) return;
    this.list = addDue(this.list, entries);
    const dueAt = Math.min(...entries.map((e) => e.at));
    this.deps.poller()?.send({ type: "DUE", dueAt, at: now });
  }

  /** Takes the entries due by `now` (a claim is about to run); `levels` go to the claimer. */
  take(now: number): { levels: number[]; taken: DueEntry[] } {
    const r = takeDue(this.list, now);
    this.list = r.rest;
    return r;
  }

  /** Puts taken entries back (their claim failed, so their rows did not move). */
  putBack(taken: readonly DueEntry[]): void {
    if (taken.length > 0) this.list = addDue(this.list, taken);
  }

  /** The earliest known due time, or null. */
  next(): number | null {
    return nextDueAt(this.list);
  }

  /**
   * `writer`, noting the due time of each delayed retry or reschedule once its write has landed.
   * `priorityOf` is read when the write is queued: the runtime drops the attempt right after that.
   */
  noting(writer: OutcomeSink, priorityOf: (jobId: string) => number | undefined): OutcomeSink {
    const wrap = (item: { id: string; delayMs: number }, done: (accepted: boolean) => void) => {
      const priority = priorityOf(item.id);
      if (priority === undefined || !(item.delayMs > 0)) return done;
      return (accepted: boolean) => {
        if (accepted) this.note([{ priority, inMs: item.delayMs }]);
        done(accepted);
      };
    };
    return {
      complete: (item, done) => writer.complete(item, done),
      kill: (item, done) => writer.kill(item, done),
      retry: (item, done) => writer.retry(item, wrap(item, done)),
      reschedule: (item, done) => writer.reschedule(item, wrap(item, done)),
    };
  }
}
