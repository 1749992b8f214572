// SPDX-License-Identifier: MIT
//
// consumer.cpp - a C++17 host built against an installed libscsitgt with nothing but
// `pkg-config --cflags --libs libscsitgt`: a target with three null LUNs, enumeration and
// lookup, an event callback, and scsitgt_engine_post() from a std::thread that takes a LUN
// offline on the home loop. Prints what it saw; the test checks the lines.
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <libscsitgt/scsitgt.h>

namespace {

struct host {
	uv_loop_t loop;
	scsitgt_engine *engine = nullptr;
	std::thread::id home;
	std::vector<uint64_t> lun_ids;
	int targets = 0;
	bool post_on_home = false;
	uint64_t offline_event_lun = UINT64_MAX;
};

int create_lun(scsitgt_target *tgt, uint64_t id)
{
	void *bctx = nullptr;
	scsitgt_lun_opts lo;
	scsitgt_lun *lun = nullptr;

	if (scsitgt_backend_null_create(&bctx) != 0)
		return -1;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	return scsitgt_lun_create(&lun, tgt, &lo);
}

} // namespace

int main()
{
	host h;
	scsitgt_target_opts to;
	scsitgt_target *tgt = nullptr;

	if (uv_loop_init(&h.loop) != 0 || scsitgt_engine_create(&h.engine, &h.loop, nullptr) != 0)
		return 1;
	h.home = std::this_thread::get_id();
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.example:cxx";
	if (scsitgt_target_create(&tgt, h.engine, &to) != 0)
		return 1;
	for (uint64_t id : {7u, 2u, 4u})
		if (create_lun(tgt, id) != 0)
			return 1;

	scsitgt_engine_set_event_cb(
		h.engine,
		[](void *arg, const scsitgt_event *ev) {
			auto *hp = static_cast<host *>(arg);
			if (ev->type == SCSITGT_EVENT_LUN_OFFLINE)
				hp->offline_event_lun = ev->lun_id;
		},
		&h);

	scsitgt_engine_foreach_target(
		h.engine,
		[](void *arg, scsitgt_target *) {
			static_cast<host *>(arg)->targets++;
			return 0;
		},
		&h);
	scsitgt_target_foreach_lun(
		scsitgt_engine_find_target(h.engine, "IQN.2026-12.ORG.EXAMPLE:CXX"),
		[](void *arg, scsitgt_lun *lun) {
			static_cast<host *>(arg)->lun_ids.push_back(scsitgt_lun_get_id(lun));
			return 0;
		},
		&h);
	std::printf("targets %d luns", h.targets);
	for (uint64_t id : h.lun_ids)
		std::printf(" %llu", static_cast<unsigned long long>(id));
	std::printf("\n");

	// Another thread asks the home loop to take LUN 4 offline, then to destroy the engine.
	std::thread worker([&h] {
		scsitgt_engine_post(
			h.engine,
			[](void *arg) {
				auto *hp = static_cast<host *>(arg);
				hp->post_on_home = std::this_thread::get_id() == hp->home;
				scsitgt_target *t =
					scsitgt_engine_find_target(hp->engine, "iqn.2026-12.org.example:cxx");
				scsitgt_lun_set_offline(scsitgt_target_get_lun(t, 4), true);
				scsitgt_engine_destroy(hp->engine, nullptr, nullptr);
			},
			&h);
	});
	worker.join();
	uv_run(&h.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&h.loop) != 0)
		return 1;
	std::printf("post %s, offline event lun %llu\n", h.post_on_home ? "on home" : "elsewhere",
		    static_cast<unsigned long long>(h.offline_event_lun));
	return 0;
}
