/** The in-memory coordinator: process-wide named buses, the twin used by tests and single-process demos. */
export { InMemoryCoordinator } from "./in-memory-coordinator.js";
export { InMemoryBus, publishRawInMemory, type BusMember } from "./in-memory-bus.js";
export {
  DEFAULT_IN_MEMORY_BUS,
  parseInMemorySpec,
  validateInMemoryConfig,
  type InMemoryCoordinatorConfig,
} from "./in-memory-config.js";
