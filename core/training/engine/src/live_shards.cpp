#include "skein/training/engine/live_shards.hpp"

#include <sstream>

#include <torch/serialize.h>

#include "skein/detail/json.hpp"
#include "skein/training/engine/live_recovery.hpp"
#include "skein/training/engine/optimizer_shards.hpp"

namespace skein::core {

namespace {

nlohmann::json offer_json(const ShardOffer& o) {
  return {{"id", o.id}, {"shards_of", o.shards_of}, {"epoch", o.epoch}, {"batches", o.batches}, {"kept", o.kept}};
}

ShardOffer offer_of(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  ShardOffer o;
  o.id = j.at("id").get<int>();
  o.shards_of = j.at("shards_of").get<std::vector<int>>();
  o.epoch = j.at("epoch").get<long>();
  o.batches = j.at("batches").get<long>();
  o.kept = j.at("kept").get<bool>();
  return o;
}

std::string where(const ShardOffer& o) {
  return "epoch " + std::to_string(o.epoch) + ", train batch " + std::to_string(o.batches);
}

}  // namespace

ShardPlan plan_shard_hand_over(RegroupingParallel& group, int rank, int world_size, const ShardOffer& mine) {
  std::vector<ShardOffer> offers;
  for (int r = 0; r < world_size; ++r) {
    std::string bytes = r == rank ? offer_json(mine).dump() : std::string();
    group.broadcast_bytes(bytes, r);
    offers.push_back(offer_of(bytes));
  }
  return plan_from_offers(offers);
}

ShardPlan plan_from_offers(const std::vector<ShardOffer>& offers) {
  const int world_size = static_cast<int>(offers.size());
  ShardPlan plan;
  for (int r = 0; r < world_size && plan.kept_from < 0; ++r)
    if (offers[static_cast<std::size_t>(r)].kept) plan.kept_from = r;
  if (plan.kept_from >= 0) return plan;  // its checkpoint holds everything, where every holder is

  const ShardOffer* first = nullptr;
  for (const auto& o : offers) {
    if (o.shards_of.empty()) continue;
    if (!first) {
      first = &o;
    } else if (o.shards_of != first->shards_of || o.epoch != first->epoch || o.batches != first->batches) {
      throw NotRecoverable("live recovery: the optimizer's shards were stepped to different places (" + where(*first) +
                           " on one member, " + where(o) + " on another), so no one state can be put together");
    }
  }
  if (!first) throw std::logic_error("live recovery: no member holds a shard of the optimizer");
  plan.shards_of = first->shards_of;
  const int n = static_cast<int>(plan.shards_of.size());
  auto rank_of = [&](int id) {
    for (int r = 0; r < world_size; ++r)
      if (offers[static_cast<std::size_t>(r)].id == id && !offers[static_cast<std::size_t>(r)].shards_of.empty())
        return r;
    return -1;
  };
  for (int k = 0; k < n; ++k) {
    int holder = rank_of(plan.shards_of[static_cast<std::size_t>(k)]);
    if (holder < 0 && n > 1) holder = rank_of(plan.shards_of[static_cast<std::size_t>((k + n - 1) % n)]);
    if (holder < 0)
      throw NotRecoverable("live recovery: the optimizer's shard of rank " + std::to_string(k) + " of " +
                           std::to_string(n) + " was lost with that rank and with rank " +
                           std::to_string((k + n - 1) % n) + ", which mirrored it");
    plan.holder.push_back(holder);
  }
  return plan;
}

std::vector<ShardBytes> gather_shards(RegroupingParallel& group, int rank, const ShardPlan& plan,
                                      const std::function<ShardBytes(int shard)>& serialize) {
  std::vector<ShardBytes> shards(plan.holder.size());
  for (std::size_t k = 0; k < plan.holder.size(); ++k) {
    const int root = plan.holder[k];
    if (root == rank) shards[k] = serialize(static_cast<int>(k));
    group.broadcast_bytes(shards[k].params, root);
    group.broadcast_bytes(shards[k].optimizer, root);
    if (rank != 0) shards[k] = {};  // the leader's alone
  }
  return shards;
}

ShardBytes shard_bytes(RunParts& parts, int owner, bool own) {
  if (!own && (!parts.mirror.active() || parts.mirror.owner() != owner))
    throw std::logic_error("live recovery: asked for a shard this rank does not hold");
  const RunningShard shard = own ? RunningShard{*parts.optimizer, parts.step_pieces} : parts.mirror.shard();
  ShardBytes bytes;
  {
    torch::NoGradGuard no_grad;
    const auto params = parts.model->parameters();
    std::vector<torch::Tensor> spans;
    for (const auto& span : owned_spans(parts.shard_spans, owner))
      spans.push_back(params[span.param].detach().reshape({-1}).narrow(0, span.offset, span.length).clone());
    std::ostringstream out;
    torch::save(spans, out);
    bytes.params = out.str();
  }
  torch::serialize::OutputArchive archive;
  joined_shard(*parts.optimizer_factory, shard)->save(archive);
  std::ostringstream out;
  archive.save_to(out);
  bytes.optimizer = out.str();
  return bytes;
}

std::unique_ptr<torch::optim::Optimizer> place_shards(RunParts& parts, const std::vector<ShardBytes>& shards) {
  const auto params = parts.model->parameters();
  {
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < shards.size(); ++k) {
      std::vector<torch::Tensor> spans;
      std::istringstream in(shards[k].params);
      torch::load(spans, in);
      const auto mine = owned_spans(parts.shard_spans, static_cast<int>(k));
      if (spans.size() != mine.size()) throw std::runtime_error("live recovery: a shard's parameters do not fit");
      for (std::size_t j = 0; j < mine.size(); ++j) {
        const torch::Tensor& p = params[mine[j].param];
        const torch::Tensor from = spans[j].to(p.device(), p.scalar_type());
        if (mine[j].length == p.numel())
          p.copy_(from.reshape(p.sizes()));
        else
          flat_over(p, mine[j].offset, mine[j].length).copy_(from);
      }
    }
  }
  ShardSource source;
  source.rank = -1;  // every shard from its bytes, this rank's too
  source.world_size = static_cast<int>(shards.size());
  source.load = [&](int r, torch::serialize::InputArchive& archive, const torch::Device& device) {
    const std::string& bytes = shards[static_cast<std::size_t>(r)].optimizer;
    archive.load_from(bytes.data(), bytes.size(), device);
  };
  return consolidated_optimizer(*parts.optimizer_factory, {*parts.optimizer, parts.step_pieces}, params,
                                parts.shard_spans, source);
}

}  // namespace skein::core
