/** The fleet layer's public surface: shard roles, node presence, peer discovery, node-to-node messages, rendezvous ownership and the damped balancer. */
export { liveNodes, NodeRegistry, type NodeEntry, type NodeRole } from "./NodeRegistry.js";
export { PeerChecks } from "./PeerChecks.js";
export { PeerClient, type PeerReply } from "./PeerClient.js";
export { PeerDiscovery, REGISTRY_INTERVAL_MS_DEFAULT, type FleetBeat } from "./PeerDiscovery.js";
export {
  announcementSchema,
  asBaseUrl,
  forwardAnswerFrameSchema,
  forwardedCallSchema,
  forwardFrameSchema,
  PEER_SOCKET_CALLS_MAX,
  functionCallFields,
  PEER_ROUTES,
  wakeHintsSchema,
  type Announcement,
  type ForwardedAnswer,
  type ForwardedCall,
  type ForwardedKind,
  type ForwardAnswerFrame,
  type ForwardFrame,
} from "./peerMessages.js";
export { ROLE_TRANSITIONS, ShardRoles, type RoleChange, type ShardRole } from "./ShardRoles.js";
export { WakeHintSender, type WakeHintTarget } from "./WakeHintSender.js";
export { assignment, ownerOf, rendezvousRanking, rendezvousWeight } from "./rendezvous.js";
export { OwnershipPlanner, type OwnershipObservation, type OwnershipPlan } from "./OwnershipPlanner.js";
export { FleetBalancer, type FleetView } from "./FleetBalancer.js";
export { FLEET_TUNING_DEFAULTS, resolveFleetTuning, type FleetTuning } from "./fleetTuning.js";
