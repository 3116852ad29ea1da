#include "report/shard_items.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "io/case_json.hpp"
#include "io/json_input.hpp"

namespace normcheck::nightly {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const unsigned char* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0) | (i + 2 < n ? uint32_t{p[i + 2]} : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string unbase64(const std::string& s) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const char* at = std::strchr(kAlphabet, c);
    if (!at || c == '\0') throw std::invalid_argument("shard_items: not base64");
    v = (v << 6) | static_cast<uint32_t>(at - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

/// A trivially copyable value as its bytes.
template <class T>
std::string bytes_of(const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  return base64(reinterpret_cast<const unsigned char*>(&v), sizeof v);
}
template <class T>
T from_bytes(const json& j) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::string raw = unbase64(j.get<std::string>());
  if (raw.size() != sizeof(T)) throw std::invalid_argument("shard_items: an accumulator of another size (another build?)");
  T v;
  std::memcpy(&v, raw.data(), sizeof v);
  return v;
}

/// An accumulator read back from a shard: its counts are untrusted and checked before any sum.
ErrorAccumulator accumulator_of(const json& j) {
  const auto acc = from_bytes<ErrorAccumulator>(j);
  if (!acc.counts_plausible()) throw std::invalid_argument("shard_items: an accumulator with impossible counts (negative or beyond 2^53)");
  if (!acc.values_plausible()) throw std::invalid_argument("shard_items: an accumulator with impossible errors (negative or NaN)");
  return acc;
}

/// A count read from a shard report: an integer from 0 to kMaxPlausibleCount.
int64_t count_of(const json& j, const char* what) {
  if (!j.is_number_integer()) throw std::invalid_argument(std::string("shard_items: ") + what + " is not an integer");
  const int64_t n = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(kMaxPlausibleCount) ? -1 : j.get<int64_t>();
  if (n < 0 || n > kMaxPlausibleCount)
    throw std::invalid_argument(std::string("shard_items: ") + what + " " + j.dump() + " is not a count from 0 to 2^53 (a crafted or corrupt shard)");
  return n;
}

/// A case's row count or row length read from a shard report: a count of at least 1 (no case is
/// empty; a crafted rows 0 once merged into a worst case that failed the report's schema).
int64_t extent_of(const json& j, const char* what) {
  const int64_t n = count_of(j, what);
  if (n < 1) throw std::invalid_argument(std::string("shard_items: ") + what + " 0 is not a case's extent (a crafted or corrupt shard)");
  return n;
}

BiasAccumulator bias_of(const json& b) {
  const BiasAccumulator::State s{parse_hexfloat(b.at(0).get<std::string>()), parse_hexfloat(b.at(1).get<std::string>()),
                                 count_of(b.at(2), "a bias element count"), count_of(b.at(3), "a bias group count")};
  if (!std::isfinite(s.t) || !std::isfinite(s.v) || s.v < 0) throw std::invalid_argument("shard_items: a bias statistic that is not finite");
  return BiasAccumulator::from_state(s);
}

json partial_json(const CasePartial& p) {
  const OutputJudgement& j = p.judgement;
  const BiasAccumulator::State b = j.bias.state();
  json out = {{"record", p.record},         {"output", j.output},   {"acc", bytes_of(j.acc)},
              {"own", bytes_of(j.own)},     {"worst", bytes_of(j.worst)}, {"failed", j.failed},
              {"own_failed", j.own_failed}, {"kernel_failure", j.kernel_failure}, {"declined", j.declined},
              {"bias", {hexfloat(b.t), hexfloat(b.v), b.elements, b.groups}}};
  if (j.has_looser) out["looser"] = {bytes_of(j.looser), j.looser_failed};  // the looser contract (external kernels, "auto")
  return out;
}

CasePartial partial_from(const json& p) {
  CasePartial out;
  out.record = p.at("record").get<size_t>();
  OutputJudgement& j = out.judgement;
  j.output = p.at("output").get<std::string>();
  j.acc = accumulator_of(p.at("acc"));
  j.own = accumulator_of(p.at("own"));
  j.worst = from_bytes<WorstElement>(p.at("worst"));
  j.failed = p.at("failed").get<bool>();
  j.own_failed = p.at("own_failed").get<bool>();
  j.kernel_failure = p.at("kernel_failure").get<std::string>();
  j.declined = p.at("declined").get<bool>();
  if (p.contains("looser")) {
    j.has_looser = true;
    j.looser = accumulator_of(p.at("looser").at(0));
    j.looser_failed = p.at("looser").at(1).get<bool>();
  }
  j.bias = bias_of(p.at("bias"));
  return out;
}

}  // namespace

std::string accumulator_bytes(const ErrorAccumulator& acc) { return bytes_of(acc); }

ErrorAccumulator accumulator_from_bytes(const json& j) {
  if (!j.is_string()) throw std::invalid_argument("acc_bytes: not a string");
  return accumulator_of(j);
}

ShardRecordAccumulator shard_record_accumulator(const json& record, const std::string& section) {
  const auto dt = parse_dtype(record.at("storage").get<std::string>());
  if (!dt) throw std::invalid_argument("a " + section + " record has an unknown storage dtype");
  ShardRecordAccumulator out{*dt, {}, report_count(record, "cases") > 0};
  if (!out.ran) return out;
  if (!record.contains("acc_bytes")) throw std::invalid_argument("a " + section + " shard record has no acc_bytes (not a shard report?)");
  out.acc = accumulator_from_bytes(record.at("acc_bytes"));
  return out;
}

namespace {

/// A case's families: one flag per op family (family_index order; families past the array's end
/// were not run: a shard written before they existed).
OpFamilies families_from(const json& j) {
  if (!j.is_array() || j.empty() || j.size() > static_cast<size_t>(kOpFamilies))
    throw std::invalid_argument("shard_items: 'families' is not 1 to " + std::to_string(kOpFamilies) + " flags");
  OpFamilies out{};
  for (size_t f = 0; f < j.size(); ++f) out[f] = j.at(f).get<bool>();
  return out;
}

/// An oracle certificate's family index.
int family_key(const json& j) {
  const int f = j.get<int>();
  if (f < 0 || f >= kOpFamilies) throw std::invalid_argument("shard_items: an oracle certificate of an unknown op family");
  return f;
}

}  // namespace

json shard_items_json(const std::vector<std::pair<int64_t, CaseResult>>& items) {
  json out = json::array();
  for (const auto& [index, item] : items) {
    json oracle = json::array(), partials = json::array();
    for (const auto& [family, o] : item.oracle) oracle.push_back({family, hexfloat(o.err_ulps), o.bits, o.certified});
    for (const CasePartial& p : item.partials) partials.push_back(partial_json(p));
    out.push_back({{"item", index},
                   {"seed", std::to_string(item.seed)},
                   {"digest", std::to_string(item.digest)},
                   {"rows", item.rows},
                   {"n", item.n},
                   {"eps", hexfloat(item.eps)},
                   {"families", item.families},
                   {"oracle", oracle},
                   {"partials", partials}});
  }
  return out;
}

std::vector<std::pair<int64_t, CaseResult>> shard_items_from_json(const json& j) {
  std::vector<std::pair<int64_t, CaseResult>> out;
  try {
    for (const json& e : j) {
      CaseResult item;
      item.seed = parse_decimal_u64(e.at("seed").get<std::string>(), "seed");
      item.digest = parse_decimal_u64(e.at("digest").get<std::string>(), "digest");
      item.rows = extent_of(e.at("rows"), "rows");
      item.n = extent_of(e.at("n"), "n");
      item.eps = parse_hexfloat(e.at("eps").get<std::string>());
      if (!(item.eps > 0) || !std::isfinite(item.eps)) throw std::invalid_argument("shard_items: an eps that is not finite and positive");
      item.families = families_from(e.at("families"));
      for (const json& o : e.at("oracle"))
        item.oracle[family_key(o.at(0))] = {parse_hexfloat(o.at(1).get<std::string>()), o.at(2).get<int>(), o.at(3).get<bool>()};
      for (const json& p : e.at("partials")) item.partials.push_back(partial_from(p));
      for (const CasePartial& p : item.partials)  // every output has at most rows * n elements
        if (p.judgement.worst.index < -1 || (p.judgement.worst.index >= 0 && p.judgement.worst.index / item.n >= item.rows))
          throw std::invalid_argument("shard_items: a worst element outside its case (a crafted or corrupt shard)");
      out.emplace_back(e.at("item").get<int64_t>(), std::move(item));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("shard_items: malformed entry (") + e.what() + ")");
  }
  return out;
}

}  // namespace normcheck::nightly
