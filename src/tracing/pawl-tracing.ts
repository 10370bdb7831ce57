/**
 * One client's or node's tracing: the loaded API, the tracer, and whether tracing is on right now. A
 * client or node with `tracing: false` has none (null), and neither does one whose `@opentelemetry/api`
 * is not installed once the load has answered: every hook is then a null check.
 */
import type { Tracer } from "@opentelemetry/api";
import { loadOtelApi, type OtelApi } from "./otel-api.js";
import type { ResolvedTracing } from "../input/tracing-options.js";

/** The instrumentation scope of pawl's spans. */
export const tracerName = "pawl";

/** Tracing for one client or node. */
export class PawlTracing {
  /** The API once loaded; null when it is not installed; undefined before the load answered. */
  api: OtelApi | null | undefined = undefined;
  private loading: Promise<OtelApi | null> | undefined;
  /** The global provider's delegate while none is registered (the API's no-op provider). */
  private noopDelegate: unknown = undefined;
  private provider: unknown = undefined;
  private cachedTracer: Tracer | null = null;

  constructor(
    readonly options: ResolvedTracing,
    private readonly load: () => Promise<OtelApi | null> = () => loadOtelApi(),
  ) {}

  /** Loads the API (once); resolves with it, or null when it is not installed. Never rejects. */
  ready(): Promise<OtelApi | null> {
    this.loading ??= this.load().then(
      (api) => {
        this.api = api;
        if (api) this.noopDelegate = new api.ProxyTracerProvider().getDelegate();
        return api;
      },
      () => (this.api = null),
    );
    return this.loading;
  }

  /**
   * The tracer when tracing is on now: the API is loaded, and a provider was given or one is registered
   * globally. Null otherwise, also when the provider throws. Cheap (no allocation): called once per
   * enqueue and per attempt. Never throws.
   */
  tracer(): Tracer | null {
    const api = this.api;
    if (!api) return null;
    try {
      const provider = this.options.tracerProvider ?? api.trace.getTracerProvider();
      if (provider !== this.provider) {
        this.provider = provider;
        const off =
          provider instanceof api.ProxyTracerProvider && provider.getDelegate() === this.noopDelegate;
        this.cachedTracer = off ? null : (provider.getTracer(tracerName) as Tracer);
      } else if (this.cachedTracer === null && provider instanceof api.ProxyTracerProvider) {
        // The API's proxy stays the global provider when a provider is set as its delegate only.
        if (provider.getDelegate() !== this.noopDelegate) this.cachedTracer = provider.getTracer(tracerName);
      }
    } catch {
      // A provider whose getTracer throws traces nothing; it must not cost an enqueue or an attempt.
      this.cachedTracer = null;
    }
    return this.cachedTracer;
  }
}
