/** The Hazelcast coordinator: a reliable topic shared by all nodes, with background reconnection. */
export { HazelcastCoordinator } from "./hazelcast-coordinator.js";
export {
  DEFAULT_HAZELCAST_TOPIC,
  parseHazelcastSpec,
  resolveHazelcastConfig,
  type HazelcastCoordinatorConfig,
  type HazelcastCoordinatorInput,
} from "./hazelcast-config.js";
