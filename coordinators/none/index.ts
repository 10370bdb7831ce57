/** The `none` coordinator: no wakeups, polling only (the default). */
export { NoneCoordinator } from "./none-coordinator.js";
export { parseNoneSpec, type NoneCoordinatorConfig } from "./none-config.js";
