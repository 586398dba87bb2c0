import { CairnError, invalidArgument, SESSION_TOPICS_MAX, TOPIC_CHARS_MAX } from "../base/index.js";
import type { Value } from "../model/Value.js";

/**
 * The topics the client listens to for Broadcasts, with a count of listeners each.
 * Invariant: a topic is in the map while it has a listener; the server is told of a
 * topic when its first listener comes (ModifyTopics add) and its last goes (remove),
 * and of every topic again after each reconnect.
 */

export type BroadcastListener = (event: Value) => void;

/** One `onBroadcast` registration (the same function registered twice counts twice). */
export interface BroadcastRegistration {
  readonly topic: string;
  readonly listener: BroadcastListener;
  active: boolean;
}

export class BroadcastTopics {
  private readonly byTopic = new Map<string, Set<BroadcastRegistration>>();

  /** Registers a listener; `first` when the topic is new (to be sent to the server). */
  add(topic: string, listener: BroadcastListener): { registration: BroadcastRegistration; first: boolean } {
    checkTopic(topic);
    let registrations = this.byTopic.get(topic);
    const first = registrations === undefined;
    if (registrations === undefined) {
      if (this.byTopic.size >= SESSION_TOPICS_MAX) {
        throw new CairnError("SESSION_LIMIT_EXCEEDED", `a client listens to at most ${SESSION_TOPICS_MAX} topics`, {
          details: { topicsMax: SESSION_TOPICS_MAX },
        });
      }
      registrations = new Set();
      this.byTopic.set(topic, registrations);
    }
    const registration: BroadcastRegistration = { topic, listener, active: true };
    registrations.add(registration);
    return { registration, first };
  }

  /** Unregisters; whether that was the topic's last listener (to be removed on the server). */
  remove(registration: BroadcastRegistration): boolean {
    if (!registration.active) return false;
    registration.active = false;
    const registrations = this.byTopic.get(registration.topic);
    registrations?.delete(registration);
    if (registrations === undefined || registrations.size > 0) return false;
    this.byTopic.delete(registration.topic);
    return true;
  }

  listenersOf(topic: string): BroadcastRegistration[] {
    return [...(this.byTopic.get(topic) ?? [])];
  }

  topics(): string[] {
    return [...this.byTopic.keys()];
  }
}

/** A topic the protocol accepts: 1 to TOPIC_CHARS_MAX characters. */
export function checkTopic(topic: string): void {
  if (typeof topic !== "string" || topic.length === 0 || topic.length > TOPIC_CHARS_MAX) {
    throw invalidArgument(`a topic is 1 to ${TOPIC_CHARS_MAX} characters`, { topicCharsMax: TOPIC_CHARS_MAX });
  }
}
