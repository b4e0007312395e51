#include <boost/test/unit_test.hpp>

#include <vector>

#include "skein/training/engine/live_recovery.hpp"
#include "skein/training/engine/live_shards.hpp"

// Who sends which optimizer shard at a live hand-over under zero
// (live_shards.hpp): each from its owner, else from the rank before it that
// mirrors it; a kept checkpoint instead when a member has one; and the
// cases no one state can be put together from.
BOOST_AUTO_TEST_SUITE(live_shards)

namespace {

using skein::core::NotRecoverable;
using skein::core::plan_from_offers;
using skein::core::ShardOffer;

// A member `id` holding shards of membership `of`, at train batch `batches` of epoch 2.
ShardOffer holder(int id, std::vector<int> of, long batches = 5) {
  ShardOffer o;
  o.id = id;
  o.shards_of = std::move(of);
  o.epoch = 2;
  o.batches = batches;
  return o;
}

ShardOffer replacement(int id) {
  ShardOffer o;
  o.id = id;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_shard_comes_from_its_owner_while_it_is_there) {
  // Ids 0, 1, 2 took in replacement 3: every owner is a member.
  const auto plan = plan_from_offers({holder(0, {0, 1, 2}), holder(1, {0, 1, 2}), holder(2, {0, 1, 2}), replacement(3)});
  BOOST_TEST(plan.kept_from == -1);
  BOOST_TEST(plan.shards_of == (std::vector<int>{0, 1, 2}));
  BOOST_TEST(plan.holder == (std::vector<int>{0, 1, 2}));
}

BOOST_AUTO_TEST_CASE(a_lost_owners_shard_comes_from_the_rank_before_it) {
  // Id 1 lost: its shard from id 0 (new rank 0); id 0 lost: from id 2, the last.
  auto plan = plan_from_offers({holder(0, {0, 1, 2}), holder(2, {0, 1, 2})});
  BOOST_TEST(plan.holder == (std::vector<int>{0, 0, 1}));
  plan = plan_from_offers({holder(1, {0, 1, 2}), holder(2, {0, 1, 2})});
  BOOST_TEST(plan.holder == (std::vector<int>{1, 0, 1}));
  // Two of two: the one left holds both.
  plan = plan_from_offers({holder(5, {3, 5})});
  BOOST_TEST(plan.holder == (std::vector<int>{0, 0}));
}

BOOST_AUTO_TEST_CASE(a_shard_lost_with_its_mirror_cannot_be_put_together) {
  // Ids 1 and 2 lost together: shard 2's owner and its mirror (rank 1).
  BOOST_CHECK_EXCEPTION(plan_from_offers({holder(0, {0, 1, 2}), replacement(3)}), NotRecoverable,
                        [](const NotRecoverable& e) {
                          return std::string(e.what()).find("shard of rank 1 of 3 was lost with that rank and "
                                                            "with rank 0") == std::string::npos &&
                                 std::string(e.what()).find("shard of rank 2 of 3") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(shards_stepped_to_different_places_are_refused) {
  BOOST_CHECK_EXCEPTION(plan_from_offers({holder(0, {0, 1, 2}, 5), holder(2, {0, 1, 2}, 6)}), NotRecoverable,
                        [](const NotRecoverable& e) {
                          return std::string(e.what()).find("epoch 2, train batch 5 on one member, epoch 2, train "
                                                            "batch 6 on another") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(a_kept_checkpoint_is_sent_instead_of_the_shards) {
  // A hand-over that some finished (they kept its checkpoint) and others
  // did not (their shards are of the membership before): the checkpoint.
  ShardOffer kept = holder(2, {0, 2});
  kept.kept = true;
  const auto plan = plan_from_offers({holder(0, {0, 1, 2}), kept});
  BOOST_TEST(plan.kept_from == 1);
}

BOOST_AUTO_TEST_SUITE_END()
