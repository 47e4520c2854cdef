// Shared by the engine's C++ tests: a check that prints its message and exits, a seeded PRNG
// (fixed seed, printed on failure), and a small MessagePack writer with every encoding the
// engine reads (so a test can build fixints, float64-encoded integers and str8 strings alike).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "errors.h"

namespace test {

inline uint64_t g_seed = 20261123;

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL (seed %llu): %s\n", static_cast<unsigned long long>(g_seed), what.c_str());
  std::exit(1);
}
inline void append(std::string& s, const std::string& x) { s += x; }
inline void append(std::string& s, const char* x) { s += x; }
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> append(std::string& s, T x) {
  s += std::to_string(x);
}
template <class... Parts>
void expect(bool ok, const Parts&... parts) {
  if (ok) return;
  std::string msg;
  (append(msg, parts), ...);
  fail(msg);
}

// Runs f, which must throw DbError with this code.
template <class F>
void expect_error(const char* code, F f, const std::string& what) {
  try {
    f();
  } catch (const ce::DbError& e) {
    expect(std::strcmp(e.code(), code) == 0, what, ": expected ", code, ", got ", e.code(), " (", e.what(), ")");
    return;
  }
  fail(what + ": expected " + code + ", nothing thrown");
}

// mulberry32, as bench/lib/random.ts.
class Rng {
 public:
  explicit Rng(uint32_t seed) : a_(seed) {}
  uint32_t next() {
    uint32_t t = a_ += 0x6d2b79f5u;
    t = (t ^ (t >> 15)) * (t | 1);
    t ^= t + (t ^ (t >> 7)) * (t | 61);
    return t ^ (t >> 14);
  }
  uint32_t below(uint32_t n) { return uint32_t((uint64_t(next()) * n) >> 32); }
  double unit() { return next() / 4294967296.0; }

 private:
  uint32_t a_;
};

// MessagePack writer.
class Mp {
 public:
  Mp& array(uint32_t n) {
    if (n < 16) byte(0x90 | n);
    else if (n < 65536) { byte(0xdc); be(n, 2); }
    else { byte(0xdd); be(n, 4); }
    return *this;
  }
  // The smallest encoding, as msgpackr writes integers.
  Mp& integer(int64_t v) {
    if (v >= 0) return uint(uint64_t(v));
    if (v >= -32) return byte(uint8_t(v));
    if (v >= -128) { byte(0xd0); return be(uint64_t(v), 1); }
    if (v >= -32768) { byte(0xd1); return be(uint64_t(v), 2); }
    if (v >= INT32_MIN) { byte(0xd2); return be(uint64_t(v), 4); }
    byte(0xd3);
    return be(uint64_t(v), 8);
  }
  Mp& uint(uint64_t v) {
    if (v < 128) return byte(uint8_t(v));
    if (v < 256) { byte(0xcc); return be(v, 1); }
    if (v < 65536) { byte(0xcd); return be(v, 2); }
    if (v <= 0xffffffffu) { byte(0xce); return be(v, 4); }
    byte(0xcf);
    return be(v, 8);
  }
  Mp& f64(double d) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    byte(0xcb);
    return be(b, 8);
  }
  Mp& f32(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    byte(0xca);
    return be(b, 4);
  }
  Mp& str(const std::string& s) {
    const size_t n = s.size();
    if (n < 32) byte(0xa0 | uint8_t(n));
    else if (n < 256) { byte(0xd9); be(n, 1); }
    else if (n < 65536) { byte(0xda); be(n, 2); }
    else { byte(0xdb); be(n, 4); }
    out_ += s;
    return *this;
  }
  Mp& boolean(bool b) { return byte(b ? 0xc3 : 0xc2); }
  Mp& nil() { return byte(0xc0); }
  Mp& map(uint32_t n) {
    if (n < 16) return byte(0x80 | n);
    byte(0xde);
    return be(n, 2);
  }
  Mp& bin(const std::string& s) {
    byte(0xc4);
    be(s.size(), 1);
    out_ += s;
    return *this;
  }
  Mp& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }

  const std::string& str() const { return out_; }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(out_.data()); }
  size_t size() const { return out_.size(); }

 private:
  Mp& byte(uint8_t b) {
    out_.push_back(char(b));
    return *this;
  }
  Mp& be(uint64_t v, int n) {
    for (int s = (n - 1) * 8; s >= 0; s -= 8) out_.push_back(char(v >> s));
    return *this;
  }
  std::string out_;
};

}  // namespace test
