#pragma once
/// Deterministic random numbers: case seeds from (run seed, stream ids), xoshiro256** streams.
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace normcheck {

/// SplitMix64 step (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Case seed derived from the run seed and the case's coordinates, never from timing.
inline uint64_t derive_seed(uint64_t run_seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t s = run_seed;
  uint64_t h = splitmix64(s);
  for (uint64_t v : {a, b, c}) {
    s = h ^ v;
    h = splitmix64(s);
  }
  return h;
}

/// xoshiro256** (Blackman, Vigna 2018).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  /// Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Integer log-uniform in [lo, hi] (lo >= 1).
  int64_t log_range(int64_t lo, int64_t hi) {
    const double l = std::log(static_cast<double>(lo)), h = std::log(static_cast<double>(hi) + 1.0);
    const auto v = static_cast<int64_t>(std::exp(l + (h - l) * uniform()));
    return v < lo ? lo : (v > hi ? hi : v);
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace normcheck
