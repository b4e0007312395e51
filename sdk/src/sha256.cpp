#include "sha256.hpp"

#include <array>
#include <cstdint>
#include <cstdio>

namespace skein {

namespace {

using u32 = std::uint32_t;

u32 rotr(u32 x, int n) { return (x >> n) | (x << (32 - n)); }

// floor(v^(1/root)) exactly, by bisection (the roots asked for are < 2^36).
std::uint64_t integer_root(unsigned __int128 v, int root) {
  std::uint64_t lo = 0, hi = std::uint64_t(1) << 36;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    unsigned __int128 p = 1;
    for (int i = 0; i < root; ++i) p *= mid;
    if (p <= v) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The standard's constants, derived as it defines them rather than typed in:
// the first 32 bits of the fractional parts of the cube roots of the first
// 64 primes (k) and of the square roots of the first 8 (h).
struct Constants {
  std::array<u32, 64> k{};
  std::array<u32, 8> h{};
  Constants() {
    std::array<std::uint64_t, 64> primes{};
    std::size_t n = 0;
    for (std::uint64_t c = 2; n < primes.size(); ++c) {
      bool prime = true;
      for (std::size_t i = 0; i < n && primes[i] * primes[i] <= c; ++i) prime = prime && c % primes[i] != 0;
      if (prime) primes[n++] = c;
    }
    for (std::size_t i = 0; i < 64; ++i) k[i] = static_cast<u32>(integer_root((unsigned __int128)primes[i] << 96, 3));
    for (std::size_t i = 0; i < 8; ++i) h[i] = static_cast<u32>(integer_root((unsigned __int128)primes[i] << 64, 2));
  }
};

void compress(std::array<u32, 8>& state, const unsigned char* block, const std::array<u32, 64>& k) {
  std::array<u32, 64> w{};
  for (int t = 0; t < 16; ++t)
    w[t] = u32(block[4 * t]) << 24 | u32(block[4 * t + 1]) << 16 | u32(block[4 * t + 2]) << 8 | u32(block[4 * t + 3]);
  for (int t = 16; t < 64; ++t) {
    const u32 s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const u32 s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  u32 a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < 64; ++t) {
    const u32 t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[t] + w[t];
    const u32 t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  state[0] += a, state[1] += b, state[2] += c, state[3] += d;
  state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  static const Constants constants;
  std::array<u32, 8> state = constants.h;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t whole = bytes.size() / 64 * 64;
  for (std::size_t at = 0; at < whole; at += 64) compress(state, data + at, constants.k);
  // The rest, a 1 bit, zeros, and the length in bits (big-endian): one or two blocks.
  std::array<unsigned char, 128> tail{};
  const std::size_t rest = bytes.size() - whole;
  for (std::size_t i = 0; i < rest; ++i) tail[i] = data[whole + i];
  tail[rest] = 0x80;
  const std::size_t tail_size = rest < 56 ? 64 : 128;
  const std::uint64_t bits = static_cast<std::uint64_t>(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_size - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (std::size_t at = 0; at < tail_size; at += 64) compress(state, tail.data() + at, constants.k);
  std::string hex;
  char digits[9];
  for (u32 word : state) {
    std::snprintf(digits, sizeof digits, "%08x", word);
    hex += digits;
  }
  return hex;
}

}  // namespace skein
