/** The fleet layer's public surface: rendezvous ownership of shards and the damped balancer. */
export { assignment, ownerOf, rendezvousRanking, rendezvousWeight } from "./rendezvous.js";
export { OwnershipPlanner, type OwnershipObservation, type OwnershipPlan } from "./OwnershipPlanner.js";
