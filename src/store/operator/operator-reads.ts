/**
 * The reads an operator's tools make (the web console, the CLI's overview commands): bounded, keyset-paged
 * views over jobs, flows, schedules and permits. They sit behind the store gateway like every other
 * statement, so observability never calls SQL functions with a pool and table names of its own.
 */
import type { FlowRow } from "../composition/flow-sql.js";
import { readFlow } from "../composition/flow-sql.js";
import { listFlowPage, readFlowGraph, type FlowGraphMember, type FlowPageFilter } from "./flow-page-sql.js";
import type { ExplainPermits } from "../../logic/explain-facts.js";
import { listPermits } from "./explain-sql.js";
import { readOverview, type Overview, type OverviewBounds } from "./overview-sql.js";
import {
  readConcurrencyKeys,
  type ConcurrencyKeys,
  type ConcurrencyKeysBounds,
} from "./concurrency-keys-sql.js";
import type { RecurringRow } from "../cluster/recurring-sql.js";
import { listSchedulePage } from "./schedule-page-sql.js";
import { searchJobs, type JobSearchFilter, type JobSearchPage } from "./job-search-sql.js";
import { listDeadPreviews, listJobPreviews, type JobPreview } from "./job-preview-sql.js";
import type { ListJobsFilter } from "../jobs/read-jobs.js";
import { validateDeadLetterFilter, type DeadLetterFilter } from "../../input/filter-input.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { validateJobId } from "../../input/job-id.js";
import { storableText } from "../../core/input-text.js";
import { listMachines, type MachineListOptions, type MachineSummary } from "./machine-list-sql.js";

/** Bounded reads for operators' views. */
export interface OperatorReads {
  /** Counts by status, queue and type (capped per status), the oldest due job and the last hour's outcomes. */
  overview(bounds?: OverviewBounds): Promise<Overview>;
  /** One page of flows, newest first. */
  flows(filter?: FlowPageFilter): Promise<FlowRow[]>;
  /** One flow's row, or null. */
  flow(id: string): Promise<FlowRow | null>;
  /** A flow's members with their edges, in id order, at most `limit`, after `afterId` when given. */
  flowGraph(flowId: string, limit?: number, afterId?: string): Promise<FlowGraphMember[]>;
  /** One page of recurring schedules by name. */
  schedules(page?: { afterName?: string; limit?: number }): Promise<RecurringRow[]>;
  /** The held permits of every resource (a count and the first holders). */
  permits(): Promise<Record<string, ExplainPermits>>;
  /** Jobs whose payload contains a text, within one bounded window of rows (job-search-sql.ts). */
  searchJobs(filter: JobSearchFilter): Promise<JobSearchPage>;
  /** listJobs' page as previews: payload, result and last error cut in SQL (job-preview-sql.ts). */
  jobPreviews(filter?: ListJobsFilter): Promise<JobPreview[]>;
  /** The dead letter queue's page as previews. */
  deadPreviews(filter?: DeadLetterFilter): Promise<JobPreview[]>;
  /**
   * The load of the concurrency keys: keys active and at their limit, keyed jobs running and waiting, and
   * the busiest keys (concurrency-keys-sql.ts; bounded however many keys there are).
   */
  concurrencyKeys(bounds?: ConcurrencyKeysBounds): Promise<ConcurrencyKeys>;
  /**
   * The newest durable machines that have not ended, running or parked (machine-list-sql.ts); with
   * `context`, each with its persisted context (else null: a view that does not show it does not read it).
   */
  machines(limit: number, options?: MachineListOptions): Promise<MachineSummary[]>;
}

/**
 * {@link OperatorReads} on PostgreSQL. The cursors and ids come from an operator's request (a console URL
 * typed or edited by hand), so each is checked before SQL: a bad one is a ValidationError naming it,
 * never a database error.
 */
export class PostgresOperatorReads implements OperatorReads {
  constructor(
    private readonly db: Queryable,
    private readonly t: Tables,
  ) {}

  overview(bounds?: OverviewBounds): Promise<Overview> {
    return readOverview(this.db, this.t, bounds);
  }

  async flows(filter?: FlowPageFilter): Promise<FlowRow[]> {
    if (filter?.beforeId !== undefined) validateJobId(filter.beforeId);
    return listFlowPage(this.db, this.t, filter);
  }

  async flow(id: string): Promise<FlowRow | null> {
    return readFlow(this.db, this.t, validateJobId(id));
  }

  async flowGraph(flowId: string, limit?: number, afterId?: string): Promise<FlowGraphMember[]> {
    validateJobId(flowId);
    if (afterId !== undefined) validateJobId(afterId);
    return readFlowGraph(this.db, this.t, flowId, limit, afterId);
  }

  async schedules(page?: { afterName?: string; limit?: number }): Promise<RecurringRow[]> {
    if (page?.afterName !== undefined) storableText("schedule name", page.afterName);
    return listSchedulePage(this.db, this.t, page);
  }

  permits(): Promise<Record<string, ExplainPermits>> {
    return listPermits(this.db, this.t);
  }

  searchJobs(filter: JobSearchFilter): Promise<JobSearchPage> {
    return searchJobs(this.db, this.t, filter);
  }

  jobPreviews(filter?: ListJobsFilter): Promise<JobPreview[]> {
    return listJobPreviews(this.db, this.t, filter);
  }

  async deadPreviews(filter?: DeadLetterFilter): Promise<JobPreview[]> {
    return listDeadPreviews(this.db, this.t, validateDeadLetterFilter(filter ?? {}));
  }

  concurrencyKeys(bounds?: ConcurrencyKeysBounds): Promise<ConcurrencyKeys> {
    return readConcurrencyKeys(this.db, this.t, bounds);
  }

  machines(limit: number, options?: MachineListOptions): Promise<MachineSummary[]> {
    return listMachines(this.db, this.t, limit, options);
  }
}
