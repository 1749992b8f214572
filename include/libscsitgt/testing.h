/* SPDX-License-Identifier: MIT */
/**
 * @file testing.h
 * Test hooks: fault injection for the project's own tests (tests/integration, driven through
 * examples/minitarget). They are OUTSIDE the ABI promise (docs/ABI.md): exported in their own
 * version node, LIBSCSITGT_TESTING, not in a release's node, and they may change or go in any
 * release, minor or patch. Never call them from a product. The umbrella header scsitgt.h does
 * not include this one.
 */
#ifndef LIBSCSITGT_TESTING_H
#define LIBSCSITGT_TESTING_H

#include <stdbool.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scsitgt_rbd_gateway;

/**
 * For tests only: with @p hold true, break the gateway's watch of the gateway object as
 * librados reports a broken watch (its error callback), and make the re-watch that follows at
 * the next probe tick hang, until called again with @p hold false.
 *
 * What the hold holds: the re-watch waits on the RBD context's worker thread, as a
 * rados_watch3() waiting for an OSD does, so every job of the LUN queued behind it waits too
 * (the gateway's probes, lock changes and reconnection, and the LUN's own jobs on that
 * thread). Meanwhile the gateway answers no probe of the others; an owner keeps writing its
 * heartbeat for a bounded number of ticks, then stops and is taken over (docs/rbd.md, "The
 * owner's heartbeat"). scsitgt_rbd_gateway_destroy() ends the hold; a host that closes the LUN
 * or destroys the engine with the hold on and the gateway still there hangs.
 *
 * @param gw   The gateway (scsitgt_rbd_gateway_create()), not destroyed.
 * @param hold Break the watch and hold its re-watch (true), or let the re-watch go on.
 * @return 0; -EINVAL (NULL @p gw); -ENOTSUP without the RBD backend.
 *
 * Loop: home of the target.
 */
SCSITGT_EXPORT int scsitgt_rbd_gateway_set_watch_fault(struct scsitgt_rbd_gateway *gw, bool hold);

/**
 * For tests only: with @p hold true, break the RBD LUN's watch of its shared reservation
 * object (scsitgt_backend_rbd_use_pr()) as an OSD that dropped it does: the LUN's copy of the
 * reservations is called stale at once (scsitgt_lun_set_pr_sync(), SCSITGT_PR_RESYNCING), the
 * watch ends on the
 * context's worker thread (logged "the reservation object is no longer watched"), and no
 * re-watch starts; so changes committed through other gateways do not reach this one. With
 * @p hold false, the store watches again, reads the object and calls the copy synced.
 *
 * @param bctx The RBD backend context, sharing reservations.
 * @param hold Break the watch and hold its re-watch (true), or let it watch again.
 * @return 0; -EINVAL (NULL @p bctx); -ENOENT (reservations not shared, or still attaching);
 *         -ENOTSUP without the RBD backend.
 *
 * Loop: the context's.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_watch_fault(void *bctx, bool hold);

/**
 * For tests only: with @p fail true, the notify of every reservation change this RBD context
 * commits to the shared object (scsitgt_backend_rbd_use_pr()) is not sent, as when the
 * context's ioctx is being replaced between the write and its notify: the change is stored,
 * the other gateways are not told (they find it in their periodic read of the object, and the
 * command is answered once their lease on their old copy ran out: docs/rbd.md).
 *
 * @param bctx The RBD backend context, sharing reservations.
 * @param fail Fail the notifies (true), or send them again.
 * @return 0; -EINVAL (NULL @p bctx); -ENOENT (reservations not shared, or still attaching);
 *         -ENOTSUP without the RBD backend.
 *
 * Loop: the context's.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_notify_fault(void *bctx, bool fail);

/**
 * For tests only: with @p fail true, every reconnection of the RBD context (the HA gateway's
 * replacement of a fenced client) fails with -ETIMEDOUT once the old client is shut down, as
 * when the monitors are out of reach; the gateway logs it and retries, until called again
 * with @p fail false.
 *
 * @param bctx The RBD backend context.
 * @param fail Fail reconnections (true), or let them connect.
 * @return 0; -EINVAL (NULL @p bctx); -ENOTSUP without the RBD backend.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_set_reconnect_fault(void *bctx, bool fail);

/**
 * For tests only: what librbd's update watch does when the image's header changed (a resize,
 * a lock owner change): the context reads the image's size again on its worker thread, at
 * once, whether or not anything changed.
 *
 * @param bctx The RBD backend context.
 * @return 0; -EINVAL (NULL @p bctx); -ENOTSUP without the RBD backend.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_rbd_flag_update(void *bctx);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_TESTING_H */
