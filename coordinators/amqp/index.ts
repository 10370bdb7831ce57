/** The AMQP (RabbitMQ) coordinator: a fanout exchange, one exclusive queue per node, amqplib recovery. */
export { AmqpCoordinator } from "./amqp-coordinator.js";
export {
  DEFAULT_AMQP_EXCHANGE,
  parseAmqpSpec,
  resolveAmqpConfig,
  type AmqpCoordinatorConfig,
  type AmqpCoordinatorInput,
} from "./amqp-config.js";
