import type { JobHandle } from '../handles/job.js';
import { parseAddOptions, type AddOptions, type PublishOptions } from './add-options.js';
import { followSignal, withoutLiveSignal } from '../handles/job-group.js';
import { jobWithId } from '../core/job-ids.js';
import type { JobRecord } from '../handles/job.js';
import { Source, type SourceParts } from './source.js';

/**
 * A worker's subscription to a {@link Topic}: a FIFO source fed by `topic.publish`.
 * Made by `worker.subscribe(topic)`.
 *
 * @typeParam T - message data
 * @typeParam R - what the handler returns
 */
export class Subscription<in out T = unknown, R = unknown> extends Source<T, R> {
  /** @internal */
  topic: Topic<T> | undefined;

  /** Not for use: a worker makes its subscriptions (`worker.subscribe(topic)`). */
  private constructor(...parts: SourceParts) {
    super(...parts);
  }

  /** @internal A subscription of the worker that passes its parts (its `subscribe`), not attached to a topic yet. */
  static make<T, R>(...parts: SourceParts): Subscription<T, R> {
    return new Subscription<T, R>(...parts);
  }

  /**
   * Stops deliveries. Jobs already delivered still run; the subscription leaves the worker's list
   * once they have. Calling it again does nothing.
   */
  unsubscribe(): void {
    if (this.topic === undefined) return;
    this.topic.detach(this);
    this.topic = undefined;
    this.host.retire(this as Source);
  }
}

/**
 * Publishes each message to every subscription, of any number of workers: one job per
 * subscription. Delivery is all or nothing.
 *
 * @typeParam T - message data. A worker whose data type includes `T` may subscribe.
 * @example
 * ```ts
 * const orders = new Topic<Order>();
 * billing.subscribe(orders);
 * shipping.subscribe(orders, { priority: 1 });
 * const handles = orders.publish(order); // two jobs, one per subscriber
 * ```
 */
export class Topic<in out T = unknown> {
  // Subscriptions of workers whose data types include T and whose results may differ.
  #subscriptions: Subscription<T, unknown>[] = [];

  /** How many subscriptions it delivers to. */
  get subscriberCount(): number {
    return this.#subscriptions.length;
  }

  /**
   * Delivers `data` as one job to every subscription and returns their handles (an empty array
   * when nobody subscribes). If any subscription is full or closed, nothing is delivered and its
   * `QueueFullError` / `QueueClosedError` is thrown.
   *
   * With an `id`, each subscription is checked on its own: one where a job with that id is in use
   * gets nothing new, and its place in the array holds that job's handle (as `add` would return
   * it; such a subscription does not refuse the publish even when full or closed).
   */
  publish(data: T, options?: PublishOptions): readonly JobHandle<unknown>[] {
    if (options !== undefined) this.#checkOptions(options);
    const id = options?.id;
    this.#checkData(data, id);
    for (const subscription of this.#subscriptions) {
      if (id !== undefined && jobWithId(subscription, id) !== undefined) continue;
      const refused = subscription.refusal(1, undefined, options?.signal?.aborted);
      if (refused !== undefined) throw refused;
    }
    return this.#deliver(data, options);
  }

  /**
   * Like {@link Topic.publish}, but returns `undefined` instead of throwing when a subscription is
   * full or closed. Bad options still throw.
   */
  tryPublish(data: T, options?: PublishOptions): readonly JobHandle<unknown>[] | undefined {
    if (options !== undefined) this.#checkOptions(options);
    const id = options?.id;
    this.#checkData(data, id);
    for (const subscription of this.#subscriptions) {
      if (id !== undefined && jobWithId(subscription, id) !== undefined) continue;
      if (subscription.refusal(1, undefined, options?.signal?.aborted) !== undefined) return undefined;
    }
    return this.#deliver(data, options);
  }

  /**
   * Refuses bad options before anything is delivered, so that a publish stays all or nothing:
   * whether an option is allowed can depend on the subscriber's worker (`transfer` needs threads),
   * and moving one message's buffers can serve only one subscription.
   */
  #checkOptions(options: AddOptions): void {
    const subscriptions = this.#subscriptions;
    let async = false;
    let threads = false;
    for (const subscription of subscriptions) {
      if (subscription.host.threads) threads = true;
      else async = true;
    }
    if (async || !threads) parseAddOptions(options, async ? false : undefined);
    if (threads) parseAddOptions(options, true);
    if (options.key != null) {
      throw new TypeError('qmux: publish option "key" is not allowed: keys belong to queues bound with the "keys" option, not to topics');
    }
    if (options.transfer !== undefined && options.transfer.length > 0 && subscriptions.length > 1) {
      throw new TypeError(
        `qmux: publish option "transfer" moves the data into one thread, but the topic has ${subscriptions.length} subscriptions; ` +
          'publish without transfer (each gets a copy)',
      );
    }
  }

  /**
   * Refuses data a subscription's worker cannot run (a function worker's must be functions),
   * before room is looked at, as bad options are. A subscription where `id` is in use gets
   * nothing new, so its worker has nothing to refuse (as `add` with that id returns the job).
   */
  #checkData(data: T, id: string | undefined): void {
    for (const subscription of this.#subscriptions) {
      // Only a function worker's subscription refuses data: the others cost no id lookup here.
      if (subscription.host.functions && (id === undefined || jobWithId(subscription, id) === undefined)) subscription.checkData(data);
    }
  }

  /** @internal */
  attach(subscription: Subscription<T, unknown>): void {
    this.#subscriptions.push(subscription);
  }

  /** @internal */
  detach(subscription: Subscription<T, unknown>): void {
    this.#subscriptions = this.#subscriptions.filter((other) => other !== subscription);
  }

  #deliver(data: T, options: AddOptions | undefined): JobHandle<unknown>[] {
    const fresh: JobRecord[] = [];
    // Copy first: a subscriber's handler may unsubscribe synchronously while we deliver.
    const jobs = this.#subscriptions.slice().map((subscription): JobHandle<unknown> => {
      const parsed = subscription.parseOptions(options);
      const existing = subscription.existing(parsed);
      if (existing !== undefined) return existing; // its own options stand; this publish's signal is not followed
      const job = subscription.enqueue(data, 0, withoutLiveSignal(parsed));
      fresh.push(job as JobRecord);
      return job;
    });
    // One abort listener for every delivery, not one per subscription.
    if (options?.signal !== undefined) followSignal(fresh, options.signal);
    return jobs;
  }
}
