#include "platform/market/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::platform::market {
namespace {

Timestamp At(std::string_view rfc3339) { return ParseRfc3339(rfc3339).value(); }

// An L4 offer in eu-south with one free GPU; tests change what they look at.
Offer MakeOffer(std::string machine_id, std::string model = "l4-24gb") {
  Offer o;
  o.machine_id = std::move(machine_id);
  o.gpu_model = std::move(model);
  o.id = OfferId(o.machine_id, o.gpu_model);
  o.provider_id = "usr_provider";
  o.gpu_name = "NVIDIA L4";
  o.gpus_available = 1;
  o.gpus_total = 1;
  o.vram_gb = 24;
  o.performance_score = 28;
  o.gpu_performance_scores = {28};
  o.reliability_score = 95;
  o.reliability_new = false;
  o.uptime_30d = 0.99;
  o.price = Usdc::Micros(400'000);
  o.country = "IT";
  o.region = "eu-south";
  o.city = "Milan";
  o.tier = providers::Tier::kCommunity;
  o.down_mbps = 1000;
  o.up_mbps = 500;
  o.cuda_version = "12.4";
  o.driver_version = "550.54";
  o.listed_since = At("2026-10-01T00:00:00Z");
  return o;
}

std::shared_ptr<const MachineOffers> Machine(std::string id, int64_t stamp,
                                             std::vector<Offer> offers) {
  auto m = std::make_shared<MachineOffers>();
  m->machine_id = std::move(id);
  m->stamp = stamp;
  m->offers = std::move(offers);
  return m;
}

std::shared_ptr<const MachineOffers> OneOffer(const Offer& o, int64_t stamp = 1) {
  return Machine(o.machine_id, stamp, {o});
}

std::vector<std::string> Ids(const std::vector<SearchHit>& hits) {
  std::vector<std::string> ids;
  for (const SearchHit& h : hits) ids.push_back(h.offer->id);
  return ids;
}

std::vector<std::string> MatchIds(const Snapshot& snap, const OfferQuery& q) {
  return Ids(RankAll(snap, q));
}

// ------------------------------------------------------------------ filters

TEST(Search, EachFilter) {
  // A base offer that passes every filter below, and for each filter one variant that
  // fails only it.
  const Offer base = MakeOffer("mch_base");
  struct Case {
    std::string name;
    std::function<void(OfferQuery&)> query;
    std::function<void(Offer&)> fail;
  };
  const std::vector<Case> cases = {
      {"gpu_models",
       [](OfferQuery& q) {
         q.gpu_models = {"l4-24gb", "h100-sxm-80gb"};
       },
       [](Offer& o) { o.gpu_model = "a100-sxm-80gb"; }},
      {"min_gpus", [](OfferQuery& q) { q.min_gpus = 2; }, [](Offer& o) { o.gpus_available = 1; }},
      {"min_vram_gb", [](OfferQuery& q) { q.min_vram_gb = 24; },
       [](Offer& o) { o.vram_gb = 23.9; }},
      {"max_price", [](OfferQuery& q) { q.max_price = Usdc::Micros(400'000); },
       [](Offer& o) { o.price = Usdc::Micros(400'001); }},
      {"country", [](OfferQuery& q) { q.country = "IT"; }, [](Offer& o) { o.country = "DE"; }},
      {"region", [](OfferQuery& q) { q.region = "eu-south"; },
       [](Offer& o) { o.region = "eu-central"; }},
      {"tier", [](OfferQuery& q) { q.tier = providers::Tier::kCommunity; },
       [](Offer& o) { o.tier = providers::Tier::kEnterprise; }},
      {"min_reliability", [](OfferQuery& q) { q.min_reliability = 95; },
       [](Offer& o) { o.reliability_score = 94.99; }},
      {"min_performance", [](OfferQuery& q) { q.min_performance = 28; },
       [](Offer& o) { o.performance_score = 27.9; }},
      {"min_down_mbps", [](OfferQuery& q) { q.min_down_mbps = 1000; },
       [](Offer& o) { o.down_mbps = 999; }},
      {"min_down_mbps unmeasured", [](OfferQuery& q) { q.min_down_mbps = 1; },
       [](Offer& o) { o.down_mbps.reset(); }},
      {"min_up_mbps", [](OfferQuery& q) { q.min_up_mbps = 500; },
       [](Offer& o) { o.up_mbps = 499; }},
      {"min_up_mbps unmeasured", [](OfferQuery& q) { q.min_up_mbps = 1; },
       [](Offer& o) { o.up_mbps.reset(); }},
      {"min_cuda", [](OfferQuery& q) { q.min_cuda = ParseCudaVersion("12.4"); },
       [](Offer& o) { o.cuda_version = "12.3"; }},
      {"min_cuda minor is a number", [](OfferQuery& q) { q.min_cuda = ParseCudaVersion("12.10"); },
       [](Offer& o) { o.cuda_version = "12.9"; }},
      {"min_cuda unparsable", [](OfferQuery& q) { q.min_cuda = ParseCudaVersion("1.0"); },
       [](Offer& o) { o.cuda_version = "emulated"; }},
      {"verified_only", [](OfferQuery& q) { q.verified_only = true; },
       [](Offer& o) { o.emulated = true; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    OfferQuery q;
    c.query(q);
    Offer pass = base;
    if (c.name == "min_gpus") pass.gpus_available = 2;
    if (c.name == "min_cuda minor is a number") pass.cuda_version = "12.10";
    Offer fail = pass;
    c.fail(fail);
    EXPECT_TRUE(Matches(q, pass));
    EXPECT_FALSE(Matches(q, fail));
    // Without the filter both match.
    EXPECT_TRUE(Matches(OfferQuery{}, fail)) << "fails a filter it was not given";
  }
}

TEST(Search, EveryFilterAtOnceAndNone) {
  const Offer o = MakeOffer("mch_1");
  OfferQuery q;
  q.gpu_models = {"l4-24gb"};
  q.min_gpus = 1;
  q.min_vram_gb = 24;
  q.max_price = o.price;
  q.country = "IT";
  q.region = "eu-south";
  q.tier = providers::Tier::kCommunity;
  q.min_reliability = 95;
  q.min_performance = 28;
  q.min_down_mbps = 1000;
  q.min_up_mbps = 500;
  q.min_cuda = 12004;
  q.verified_only = true;
  EXPECT_TRUE(Matches(q, o));
  EXPECT_TRUE(Matches(OfferQuery{}, o));
}

TEST(Search, DefaultHidesOffersWithoutAFreeGpu) {
  Offer busy = MakeOffer("mch_busy");
  busy.gpus_available = 0;
  busy.gpus_rented = 1;
  const Offer free = MakeOffer("mch_free");
  const Snapshot snap({OneOffer(busy), OneOffer(free)});
  OfferQuery q;
  EXPECT_EQ(q.min_gpus, 1);
  auto r = Search(snap, q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, 1);
  EXPECT_EQ(Ids(r->items), std::vector<std::string>{free.id});
  q.min_gpus = 0;  // the provider's rank view
  EXPECT_EQ(MatchIds(snap, q).size(), 2u);
}

TEST(Search, IncludeBusyShowsOffersWhoseGpusAreAllTaken) {
  Offer busy = MakeOffer("mch_busy");
  busy.gpus_total = 2;
  busy.gpus_available = 0;
  busy.gpus_rented = 2;
  const Offer free = MakeOffer("mch_free");
  const Snapshot snap({OneOffer(busy), OneOffer(free)});
  OfferQuery q;
  q.include_busy = true;
  auto r = Search(snap, q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, 2);
  // min_gpus then counts the offer's GPUs, free or not.
  q.min_gpus = 2;
  EXPECT_EQ(MatchIds(snap, q), std::vector<std::string>{busy.id});
}

TEST(Search, MedianIsOverTheMatchesOnly) {
  Offer cheap = MakeOffer("mch_1");
  cheap.price = Usdc::Micros(200'000);  // value 140
  Offer dear = MakeOffer("mch_2");
  dear.price = Usdc::Micros(700'000);  // value 40
  Offer h100 = MakeOffer("mch_3", "h100-sxm-80gb");
  h100.performance_score = 220;
  h100.price = Usdc::Micros(2'200'000);  // value 100
  const Snapshot snap({OneOffer(cheap), OneOffer(dear), OneOffer(h100)});
  OfferQuery q;
  auto all = Search(snap, q);
  ASSERT_TRUE(all.ok());
  EXPECT_DOUBLE_EQ(all->median_value, 100);
  q.gpu_models = {"l4-24gb"};
  auto l4 = Search(snap, q);
  ASSERT_TRUE(l4.ok());
  EXPECT_DOUBLE_EQ(l4->median_value, 90);
  EXPECT_EQ(l4->matched, 2);
  for (const SearchHit& h : l4->items) EXPECT_DOUBLE_EQ(h.explain.median_value, 90);
  EXPECT_EQ(Ids(l4->items), (std::vector<std::string>{cheap.id, dear.id}));
}

// ------------------------------------------------------------------ sorts

TEST(Search, EachSortsOrder) {
  // performance, price, reliability chosen so that each sort gives another order.
  auto offer = [](std::string machine, double performance, int64_t price, double reliability) {
    Offer o = MakeOffer(std::move(machine));
    o.performance_score = performance;
    o.price = Usdc::Micros(price);
    o.reliability_score = reliability;
    return o;
  };
  const Offer a = offer("mch_a", 30, 300'000, 90);  // value 100
  const Offer b = offer("mch_b", 40, 500'000, 99);  // value 80
  const Offer c = offer("mch_c", 20, 250'000, 80);  // value 80
  const Offer d = offer("mch_d", 35, 280'000, 85);  // value 125
  const Snapshot snap({OneOffer(a), OneOffer(b), OneOffer(c), OneOffer(d)});
  auto order = [&](Sort s) {
    OfferQuery q;
    q.sort = s;
    auto r = Search(snap, q);
    EXPECT_TRUE(r.ok());
    std::vector<std::string> ids = Ids(r->items);
    EXPECT_EQ(ids, MatchIds(snap, q)) << "Search and RankAll disagree";
    return ids;
  };
  using V = std::vector<std::string>;
  // Median value (80 + 100) / 2 = 90. Ranks: a 0.9·√(100/90) = 0.9487, b 0.99·√(80/90) =
  // 0.9334, c 0.8·√(80/90) = 0.7542, d 0.85·√(125/90) = 1.0017.
  EXPECT_EQ(order(Sort::kRank), (V{d.id, a.id, b.id, c.id}));
  EXPECT_EQ(order(Sort::kPrice), (V{c.id, d.id, a.id, b.id}));
  EXPECT_EQ(order(Sort::kPerformance), (V{b.id, d.id, a.id, c.id}));
  // b and c have the same value, 80: b has the higher rank.
  EXPECT_EQ(order(Sort::kValue), (V{d.id, a.id, b.id, c.id}));
  EXPECT_EQ(order(Sort::kReliability), (V{b.id, a.id, d.id, c.id}));
}

// ------------------------------------------------------------------ paging

// 12 offers with distinct ranks (the price falls with the machine number).
std::vector<std::shared_ptr<const MachineOffers>> Twelve() {
  std::vector<std::shared_ptr<const MachineOffers>> out;
  for (int i = 0; i < 12; ++i) {
    Offer o = MakeOffer("mch_" + std::string(1, static_cast<char>('a' + i)));
    o.price = Usdc::Micros(600'000 - 20'000 * i);
    o.reliability_score = 90 + (i % 4);
    out.push_back(OneOffer(o));
  }
  return out;
}

// Every page of `q` from the start, with `between(page_number, snap)` called before each
// page after the first (it may replace the snapshot).
std::vector<std::string> Walk(
    std::shared_ptr<const Snapshot> snap, OfferQuery q,
    const std::function<void(int, std::shared_ptr<const Snapshot>&)>& between = nullptr) {
  std::vector<std::string> seen;
  int page = 0;
  int64_t expected_position = 1;
  while (true) {
    if (page > 0 && between) between(page, snap);
    auto r = Search(*snap, q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) break;
    for (const SearchHit& h : r->items) {
      seen.push_back(h.offer->id);
      if (!between) {
        EXPECT_EQ(h.position, expected_position);
      }
      ++expected_position;
    }
    ++page;
    if (!r->next) break;
    q.page.after = r->next;
    if (page > 100) {
      ADD_FAILURE() << "paging does not end";
      break;
    }
  }
  return seen;
}

TEST(Search, PagingWalksEverythingOnceInOrder) {
  auto snap = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  const std::vector<std::string> all = MatchIds(*snap, q);
  ASSERT_EQ(all.size(), 12u);
  for (int limit : {1, 3, 5, 12, 50}) {
    SCOPED_TRACE(limit);
    q.page.limit = limit;
    EXPECT_EQ(Walk(snap, q), all);
  }
  // Every sort pages the same way.
  for (Sort s : {Sort::kPrice, Sort::kPerformance, Sort::kValue, Sort::kReliability}) {
    q.sort = s;
    q.page.limit = 5;
    EXPECT_EQ(Walk(snap, q), MatchIds(*snap, q));
  }
}

TEST(Search, PageCursorAndPositions) {
  auto snap = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  q.page.limit = 5;
  auto first = Search(*snap, q);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->matched, 12);
  ASSERT_EQ(first->items.size(), 5u);
  EXPECT_EQ(first->items.front().position, 1);
  ASSERT_TRUE(first->next);
  // The cursor is (position, id) of the last offer shown.
  EXPECT_EQ(*first->next,
            Cursor({Cursor::Part(int64_t{5}), Cursor::Part(first->items[4].offer->id)}));
  q.page.after = first->next;
  auto second = Search(*snap, q);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->items.front().position, 6);
  q.page.after = second->next;
  auto last = Search(*snap, q);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->items.size(), 2u);
  EXPECT_EQ(last->items.back().position, 12);
  EXPECT_FALSE(last->next);
}

// Removing an offer between pages (Snapshot::With, its machine without offers now) does
// not make the walk skip or repeat any of the others, wherever the removed one was:
// among those shown, just after the cursor or further on.
TEST(Search, PagingSurvivesAnOfferRemovedBetweenPages) {
  auto base = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  q.page.limit = 4;
  const std::vector<std::string> all = MatchIds(*base, q);
  for (size_t removed_at = 0; removed_at < all.size(); ++removed_at) {
    if (removed_at == 3) continue;  // the cursor's own offer: the next test
    SCOPED_TRACE("removed #" + std::to_string(removed_at + 1) + " after page 1");
    const std::string removed = all[removed_at];
    const std::string machine = base->Find(removed)->machine_id;
    const std::vector<std::string> seen =
        Walk(base, q, [&](int page, std::shared_ptr<const Snapshot>& snap) {
          if (page == 1) snap = snap->With({Machine(machine, 2, {})});
        });
    std::vector<std::string> expected = all;
    if (removed_at >= 4) expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(removed_at));
    EXPECT_EQ(seen, expected);
  }
}

// The cursor's own offer (the last one shown) removed before the next page: search.h says
// the next page then starts "at its position", i.e. with the offer that has moved up into
// it (#5 of the old order, now #4). The next page must not skip it.
TEST(Search, PagingSurvivesTheCursorsOwnOfferRemoved) {
  auto base = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  q.page.limit = 4;
  const std::vector<std::string> all = MatchIds(*base, q);
  auto first = Search(*base, q);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->items.back().offer->id, all[3]);
  auto next = base->With({Machine(base->Find(all[3])->machine_id, 2, {})});
  q.page.after = first->next;
  auto second = Search(*next, q);
  ASSERT_TRUE(second.ok());
  ASSERT_FALSE(second->items.empty());
  EXPECT_EQ(second->items.front().offer->id, all[4])
      << "the first offer after the cursor was skipped";
  EXPECT_EQ(second->items.front().position, 4);
  q.page.after.reset();
  std::vector<std::string> seen =
      Walk(base, q, [&](int page, std::shared_ptr<const Snapshot>& snap) {
        if (page == 1) snap = next;
      });
  EXPECT_EQ(seen, all);  // the removed one was shown on the first page
}

// An offer that appears between pages is shown when it lands after the cursor, not when
// it lands before it; nothing else is skipped or repeated.
TEST(Search, PagingWithAnOfferAddedBetweenPages) {
  auto base = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  q.page.limit = 4;
  const std::vector<std::string> all = MatchIds(*base, q);
  for (int64_t price : {100'000, 900'000}) {  // first of all, last of all
    SCOPED_TRACE(price);
    Offer added = MakeOffer("mch_new");
    added.price = Usdc::Micros(price);
    const std::vector<std::string> seen =
        Walk(base, q, [&](int page, std::shared_ptr<const Snapshot>& snap) {
          if (page == 1) snap = snap->With({OneOffer(added)});
        });
    std::vector<std::string> expected = all;
    if (price > 500'000) expected.push_back(added.id);
    EXPECT_EQ(seen, expected);
  }
}

// The removal changes the median value, so every rank moves; the order of the rest does
// not (the median scales every value factor alike).
TEST(Search, RemovalMovesTheMedianNotTheOrder) {
  auto base = std::make_shared<const Snapshot>(Twelve());
  OfferQuery q;
  const std::vector<std::string> before = MatchIds(*base, q);
  auto after = base->With({Machine("mch_a", 2, {})});
  std::vector<std::string> expected = before;
  expected.erase(std::find(expected.begin(), expected.end(), OfferId("mch_a", "l4-24gb")));
  EXPECT_EQ(MatchIds(*after, q), expected);
  EXPECT_NE(Search(*base, q)->median_value, Search(*after, q)->median_value);
}

TEST(Search, BadCursorIsAFieldErrorOnCursor) {
  const Snapshot snap(Twelve());
  for (const Cursor& bad :
       {Cursor({}), Cursor({Cursor::Part("ofr_x")}),
        Cursor({Cursor::Part("ofr_x"), Cursor::Part(int64_t{3})}),
        Cursor({Cursor::Part(int64_t{0}), Cursor::Part("ofr_x")}),
        Cursor({Cursor::Part(int64_t{-4}), Cursor::Part("ofr_x")}),
        Cursor({Cursor::Part(int64_t{3}), Cursor::Part("ofr_x"), Cursor::Part("extra")}),
        Cursor({Cursor::Part(int64_t{3}), Cursor::Part(int64_t{4})})}) {
    OfferQuery q;
    q.page.after = bad;
    auto r = Search(snap, q);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(r.status().fields().count("cursor"), 1u) << r.status().ToString();
  }
  // A well-formed cursor of an offer that is gone, beyond the end: an empty last page.
  OfferQuery q;
  q.page.after = Cursor({Cursor::Part(int64_t{40}), Cursor::Part("ofr_gone")});
  auto r = Search(snap, q);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->items.empty());
  EXPECT_FALSE(r->next);
  EXPECT_EQ(r->matched, 12);
}

TEST(Search, EmptySnapshot) {
  const Snapshot snap;
  auto r = Search(snap, OfferQuery{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 0);
  EXPECT_TRUE(r->items.empty());
  EXPECT_FALSE(r->next);
  EXPECT_EQ(r->median_value, 0);
  EXPECT_EQ(snap.machine_count(), 0u);
  EXPECT_EQ(snap.Find("ofr_x"), nullptr);
  EXPECT_EQ(snap.Machine("mch_x"), nullptr);
}

// ------------------------------------------------------------------ snapshots

TEST(Snapshot, OffersByMachineThenModelFindAndMachine) {
  const Offer b_l4 = MakeOffer("mch_b");
  const Offer a_h100 = MakeOffer("mch_a", "h100-sxm-80gb");
  const Offer a_l4 = MakeOffer("mch_a");
  const Snapshot snap({Machine("mch_b", 3, {b_l4}), Machine("mch_a", 7, {a_h100, a_l4}),
                       Machine("mch_empty", 2, {})});
  EXPECT_EQ(snap.machine_count(), 3u);
  ASSERT_EQ(snap.offers().size(), 3u);
  EXPECT_EQ(snap.offers()[0]->id, a_h100.id);
  EXPECT_EQ(snap.offers()[1]->id, a_l4.id);
  EXPECT_EQ(snap.offers()[2]->id, b_l4.id);
  ASSERT_NE(snap.Find(a_l4.id), nullptr);
  EXPECT_EQ(snap.Find(a_l4.id)->machine_id, "mch_a");
  EXPECT_EQ(snap.Find(a_l4.id)->gpu_model, "l4-24gb");
  EXPECT_EQ(snap.Find("ofr_00000000000000000000"), nullptr);
  ASSERT_NE(snap.Machine("mch_a"), nullptr);
  EXPECT_EQ(snap.Machine("mch_a")->stamp, 7);
  EXPECT_EQ(snap.Machine("mch_a")->offers.size(), 2u);
  // A machine without offers is kept, so its stamp is known.
  ASSERT_NE(snap.Machine("mch_empty"), nullptr);
  EXPECT_EQ(snap.Machine("mch_empty")->stamp, 2);
  EXPECT_EQ(snap.Machine("mch_c"), nullptr);
  EXPECT_EQ(snap.Machine("mch_"), nullptr);
}

TEST(Snapshot, WithReplacesAndAddsAndSharesTheRest) {
  Offer a = MakeOffer("mch_a");
  Offer c = MakeOffer("mch_c");
  auto ma = OneOffer(a, 1);
  auto mc = OneOffer(c, 1);
  auto base =
      std::make_shared<const Snapshot>(std::vector<std::shared_ptr<const MachineOffers>>{mc, ma});
  Offer a2 = a;
  a2.price = Usdc::Micros(123'000);
  const Offer b = MakeOffer("mch_b");
  auto next = base->With({OneOffer(b, 5), OneOffer(a2, 2)});
  // The old snapshot is unchanged.
  EXPECT_EQ(base->machine_count(), 2u);
  EXPECT_EQ(base->Find(a.id)->price, Usdc::Micros(400'000));
  EXPECT_EQ(base->Find(b.id), nullptr);
  // The new one: a replaced, b added, c shared.
  EXPECT_EQ(next->machine_count(), 3u);
  EXPECT_EQ(next->Find(a.id)->price, Usdc::Micros(123'000));
  EXPECT_EQ(next->Machine("mch_a")->stamp, 2);
  EXPECT_EQ(next->Machine("mch_b")->stamp, 5);
  EXPECT_EQ(next->Machine("mch_c"), mc.get());
  ASSERT_EQ(next->offers().size(), 3u);
  EXPECT_EQ(next->offers()[0]->machine_id, "mch_a");
  EXPECT_EQ(next->offers()[1]->machine_id, "mch_b");
  EXPECT_EQ(next->offers()[2]->machine_id, "mch_c");
  // A machine whose offers left the marketplace keeps its entry, without offers.
  auto gone = next->With({Machine("mch_c", 9, {})});
  EXPECT_EQ(gone->machine_count(), 3u);
  EXPECT_EQ(gone->offers().size(), 2u);
  EXPECT_EQ(gone->Find(c.id), nullptr);
  EXPECT_EQ(gone->Machine("mch_c")->stamp, 9);
  // Nothing changed: the same machines.
  auto same = gone->With({});
  EXPECT_EQ(same->machine_count(), 3u);
  EXPECT_EQ(same->offers().size(), 2u);
}

TEST(Snapshot, WithKeepsTheHighestStampOfAMachineGivenTwice) {
  Offer a = MakeOffer("mch_a");
  auto base = std::make_shared<const Snapshot>(
      std::vector<std::shared_ptr<const MachineOffers>>{OneOffer(a, 1)});
  Offer older = a, newer = a;
  older.price = Usdc::Micros(111'000);
  newer.price = Usdc::Micros(222'000);
  const Offer z = MakeOffer("mch_z");
  for (bool newer_first : {false, true}) {
    SCOPED_TRACE(newer_first);
    std::vector<std::shared_ptr<const MachineOffers>> changed = {OneOffer(older, 4),
                                                                 OneOffer(z, 1)};
    changed.insert(newer_first ? changed.begin() : changed.end(), OneOffer(newer, 6));
    auto next = base->With(changed);
    EXPECT_EQ(next->machine_count(), 2u);
    EXPECT_EQ(next->Machine("mch_a")->stamp, 6);
    EXPECT_EQ(next->Find(a.id)->price, Usdc::Micros(222'000));
    EXPECT_EQ(next->offers().size(), 2u);
  }
  // A machine new to the snapshot, given twice.
  auto next = base->With({OneOffer(z, 8), Machine("mch_z", 3, {})});
  EXPECT_EQ(next->Machine("mch_z")->stamp, 8);
  EXPECT_NE(next->Find(z.id), nullptr);
}

TEST(Snapshot, HitsPointIntoTheSnapshot) {
  auto snap = std::make_shared<const Snapshot>(Twelve());
  auto r = Search(*snap, OfferQuery{});
  ASSERT_TRUE(r.ok());
  for (const SearchHit& h : r->items) EXPECT_EQ(h.offer, snap->Find(h.offer->id));
}

}  // namespace
}  // namespace gpunex::platform::market
