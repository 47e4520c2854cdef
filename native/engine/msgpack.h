// MessagePack: validation, navigation and typed reads of tuples and keys.
//
// Every byte string that reaches the core from JavaScript goes through mp::check() once, before
// anything is stored: the value must be complete, every length must lie inside the buffer, the
// 0xc1 tag is refused, and containers may nest at most kMaxDepth deep. After that the tuple is
// trusted, and the navigation functions (next, field) do no bounds checks: they run inside
// comparisons on the B+tree hot path. check() is iterative in its element count (a header that
// claims more elements than bytes remain fails at once) and recursive only in depth, so a
// hostile header costs O(1) and a deep one at most kMaxDepth frames.
//
// Numbers: msgpackr writes integers above 2^32 as float64, so a numeric field is read as a Num
// that keeps its exact integer or double value, and compare_num() orders any two of them by
// value, exactly (no rounding through double for integers above 2^53).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace ce::mp {

inline constexpr int kMaxDepth = 32;

inline uint16_t load16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t load32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
inline uint64_t load64(const uint8_t* p) { return uint64_t(load32(p)) << 32 | load32(p + 4); }

// Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), ASCII 8 bytes a step.
inline bool valid_utf8(const uint8_t* p, size_t n) {
  const uint8_t* end = p + n;
  while (p < end) {
    if (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      if ((w & 0x8080808080808080ULL) == 0) { p += 8; continue; }
    }
    const uint8_t c = *p;
    if (c < 0x80) { p++; continue; }
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; }
    else return false;
    if (size_t(end - p) < len) return false;
    for (size_t i = 1; i < len; i++) {
      if ((p[i] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    p += len;
  }
  return true;
}

// Returns the end of the value that starts at p, or nullptr when it is malformed, truncated,
// nested deeper than kMaxDepth, or a string that is not well-formed UTF-8 (msgpackr writes a lone
// surrogate as such bytes and would not read it back as written).
inline const uint8_t* check(const uint8_t* p, const uint8_t* end, int depth = 0) {
  if (p >= end) return nullptr;
  const uint8_t c = *p++;
  const size_t left = size_t(end - p);
  uint64_t items = 0;
  size_t skip = 0;
  if (c <= 0x7f || c >= 0xe0) return p;
  bool text = false;
  if ((c & 0xe0) == 0xa0) {
    skip = c & 0x1f;
    text = true;
  } else if ((c & 0xf0) == 0x90) {
    items = c & 0x0f;
  } else if ((c & 0xf0) == 0x80) {
    items = uint64_t(c & 0x0f) * 2;
  } else {
    switch (c) {
      case 0xc0: case 0xc2: case 0xc3: return p;
      case 0xc4: case 0xd9: if (left < 1) return nullptr; skip = 1 + p[0]; text = c == 0xd9; break;
      case 0xc5: case 0xda: if (left < 2) return nullptr; skip = 2 + size_t(load16(p)); text = c == 0xda; break;
      case 0xc6: case 0xdb: if (left < 4) return nullptr; skip = 4 + size_t(load32(p)); text = c == 0xdb; break;
      case 0xc7: if (left < 1) return nullptr; skip = 2 + p[0]; break;
      case 0xc8: if (left < 2) return nullptr; skip = 3 + size_t(load16(p)); break;
      case 0xc9: if (left < 4) return nullptr; skip = 5 + size_t(load32(p)); break;
      case 0xcc: case 0xd0: skip = 1; break;
      case 0xcd: case 0xd1: skip = 2; break;
      case 0xca: case 0xce: case 0xd2: skip = 4; break;
      case 0xcb: case 0xcf: case 0xd3: skip = 8; break;
      case 0xd4: skip = 2; break;
      case 0xd5: skip = 3; break;
      case 0xd6: skip = 5; break;
      case 0xd7: skip = 9; break;
      case 0xd8: skip = 17; break;
      case 0xdc: if (left < 2) return nullptr; items = load16(p); skip = 2; break;
      case 0xdd: if (left < 4) return nullptr; items = load32(p); skip = 4; break;
      case 0xde: if (left < 2) return nullptr; items = uint64_t(load16(p)) * 2; skip = 2; break;
      case 0xdf: if (left < 4) return nullptr; items = uint64_t(load32(p)) * 2; skip = 4; break;
      default: return nullptr;  // 0xc1, never used
    }
  }
  if (skip > left) return nullptr;
  if (text) {
    const size_t header = c >= 0xd9 && c <= 0xdb ? size_t(1) << (c - 0xd9) : 0;
    if (!valid_utf8(p + header, skip - header)) return nullptr;
  }
  p += skip;
  if (items == 0) return p;
  if (depth + 1 > kMaxDepth || items > uint64_t(end - p)) return nullptr;
  for (uint64_t i = 0; i < items; i++) {
    p = check(p, end, depth + 1);
    if (p == nullptr) return nullptr;
  }
  return p;
}

// The end of the (already validated) value at p.
inline const uint8_t* next(const uint8_t* p) {
  uint64_t pending = 1;
  while (pending > 0) {
    pending--;
    const uint8_t c = *p++;
    if (c <= 0x7f || c >= 0xe0) continue;
    if ((c & 0xe0) == 0xa0) { p += c & 0x1f; continue; }
    if ((c & 0xf0) == 0x90) { pending += c & 0x0f; continue; }
    if ((c & 0xf0) == 0x80) { pending += uint64_t(c & 0x0f) * 2; continue; }
    switch (c) {
      case 0xc4: case 0xd9: p += 1 + p[0]; break;
      case 0xc5: case 0xda: p += 2 + load16(p); break;
      case 0xc6: case 0xdb: p += 4 + size_t(load32(p)); break;
      case 0xc7: p += 2 + p[0]; break;
      case 0xc8: p += 3 + load16(p); break;
      case 0xc9: p += 5 + size_t(load32(p)); break;
      case 0xcc: case 0xd0: p += 1; break;
      case 0xcd: case 0xd1: p += 2; break;
      case 0xca: case 0xce: case 0xd2: p += 4; break;
      case 0xcb: case 0xcf: case 0xd3: p += 8; break;
      case 0xd4: p += 2; break;
      case 0xd5: p += 3; break;
      case 0xd6: p += 5; break;
      case 0xd7: p += 9; break;
      case 0xd8: p += 17; break;
      case 0xdc: pending += load16(p); p += 2; break;
      case 0xdd: pending += load32(p); p += 4; break;
      case 0xde: pending += uint64_t(load16(p)) * 2; p += 2; break;
      case 0xdf: pending += uint64_t(load32(p)) * 2; p += 4; break;
      default: break;  // nil, bool
    }
  }
  return p;
}

inline bool is_array(const uint8_t* p) { return (*p & 0xf0) == 0x90 || *p == 0xdc || *p == 0xdd; }

// Reads an array header; returns the element count and moves p to the first element.
inline uint32_t read_array(const uint8_t** p) {
  const uint8_t c = **p;
  if (c == 0xdc) { uint32_t n = load16(*p + 1); *p += 3; return n; }
  if (c == 0xdd) { uint32_t n = load32(*p + 1); *p += 5; return n; }
  *p += 1;
  return c & 0x0f;
}

// The whole size of a value that its first byte determines: fixints, nil, booleans, fixstrs, the
// 8- to 64-bit numbers and fixexts; 0 for the rest (containers and sized strings, binaries and
// exts, and the unused 0xc1), which next() walks.
inline constexpr struct FixedSizes {
  uint8_t size[256];
  constexpr FixedSizes() : size() {
    for (int c = 0; c < 256; c++) {
      uint8_t n = 0;
      if (c <= 0x7f || c >= 0xe0) n = 1;
      else if ((c & 0xe0) == 0xa0) n = uint8_t(1 + (c & 0x1f));
      else if (c == 0xc0 || c == 0xc2 || c == 0xc3) n = 1;
      else if (c == 0xcc || c == 0xd0) n = 2;
      else if (c == 0xcd || c == 0xd1) n = 3;
      else if (c == 0xca || c == 0xce || c == 0xd2) n = 5;
      else if (c == 0xcb || c == 0xcf || c == 0xd3) n = 9;
      else if (c >= 0xd4 && c <= 0xd8) n = uint8_t(2 + (1 << (c - 0xd4)));
      size[c] = n;
    }
  }
  uint8_t operator[](uint8_t c) const { return size[c]; }
} kFixedSize;

// The field with 0-based number `fieldno` of a validated array, or nullptr when it has fewer.
inline const uint8_t* field(const uint8_t* array, uint32_t fieldno) {
  const uint8_t* p = array;
  const uint32_t count = read_array(&p);
  if (fieldno >= count) return nullptr;
  for (uint32_t i = 0; i < fieldno; i++) {
    // A value whose size its first byte gives (a scalar, a short string) is skipped without a call.
    const uint8_t size = kFixedSize[*p];
    p = size != 0 ? p + size : next(p);
  }
  return p;
}

struct Num {
  // Initialized (to unsigned 0), so that a Num that read_num() did not fill, on a path where the
  // field was checked to be a number before, still holds a defined value (gcc -O3 warns otherwise).
  enum Kind : uint8_t { kUint, kInt, kDouble } kind = kUint;  // kInt only for negative integers
  union { uint64_t u = 0; int64_t i; double d; };
};

// True when the value at p is a number (any integer or float encoding); fills *out.
inline bool read_num(const uint8_t* p, Num* out) {
  const uint8_t c = *p;
  if (c <= 0x7f) { out->kind = Num::kUint; out->u = c; return true; }
  if (c >= 0xe0) { out->kind = Num::kInt; out->i = int8_t(c); return true; }
  switch (c) {
    case 0xcc: out->kind = Num::kUint; out->u = p[1]; return true;
    case 0xcd: out->kind = Num::kUint; out->u = load16(p + 1); return true;
    case 0xce: out->kind = Num::kUint; out->u = load32(p + 1); return true;
    case 0xcf: out->kind = Num::kUint; out->u = load64(p + 1); return true;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
      int64_t v = c == 0xd0 ? int8_t(p[1]) : c == 0xd1 ? int16_t(load16(p + 1))
                : c == 0xd2 ? int32_t(load32(p + 1)) : int64_t(load64(p + 1));
      if (v >= 0) { out->kind = Num::kUint; out->u = uint64_t(v); }
      else { out->kind = Num::kInt; out->i = v; }
      return true;
    }
    case 0xca: { uint32_t b = load32(p + 1); float f; std::memcpy(&f, &b, 4); out->kind = Num::kDouble; out->d = f; return true; }
    case 0xcb: { uint64_t b = load64(p + 1); double d; std::memcpy(&d, &b, 8); out->kind = Num::kDouble; out->d = d; return true; }
    default: return false;
  }
}

inline double num_to_double(const Num& n) {
  return n.kind == Num::kUint ? double(n.u) : n.kind == Num::kInt ? double(n.i) : n.d;
}

// Integral and inside [-2^63, 2^64): the domain of 'integer' (and, when >= 0, 'unsigned').
inline bool num_is_integral(const Num& n) {
  if (n.kind != Num::kDouble) return true;
  return std::isfinite(n.d) && std::trunc(n.d) == n.d && n.d >= -9223372036854775808.0 &&
         n.d < 18446744073709551616.0;
}

inline int cmp_u_d(uint64_t u, double d) {
  if (std::isnan(d)) return 1;
  if (d < 0) return 1;
  if (d >= 18446744073709551616.0) return -1;
  const double t = std::trunc(d);
  const uint64_t ti = uint64_t(t);
  if (u != ti) return u < ti ? -1 : 1;
  return d > t ? -1 : 0;
}

inline int cmp_i_d(int64_t i, double d) {  // i < 0
  if (std::isnan(d)) return 1;
  if (d >= 0) return -1;
  if (d < -9223372036854775808.0) return 1;
  const double t = std::trunc(d);
  const int64_t ti = int64_t(t);
  if (i != ti) return i < ti ? -1 : 1;
  return d < t ? 1 : 0;
}

// Orders numbers by value whatever their encoding. NaN sorts below everything (it is refused
// in indexed fields, so this only keeps the order total).
inline int compare_num(const Num& a, const Num& b) {
  if (a.kind == Num::kDouble && b.kind == Num::kDouble) {
    if (std::isnan(a.d) || std::isnan(b.d)) return std::isnan(a.d) ? (std::isnan(b.d) ? 0 : -1) : 1;
    return a.d < b.d ? -1 : a.d > b.d ? 1 : 0;
  }
  if (a.kind == Num::kDouble) return -compare_num(b, a);
  if (b.kind == Num::kDouble) return a.kind == Num::kUint ? cmp_u_d(a.u, b.d) : cmp_i_d(a.i, b.d);
  if (a.kind != b.kind) return a.kind == Num::kInt ? -1 : 1;
  if (a.kind == Num::kUint) return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
  return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
}

// Strings and binaries: returns the payload and its length, or nullptr for other types.
inline const uint8_t* read_str(const uint8_t* p, uint32_t* len) {
  const uint8_t c = *p;
  if ((c & 0xe0) == 0xa0) { *len = c & 0x1f; return p + 1; }
  switch (c) {
    case 0xd9: *len = p[1]; return p + 2;
    case 0xda: *len = load16(p + 1); return p + 3;
    case 0xdb: *len = load32(p + 1); return p + 5;
    default: return nullptr;
  }
}

inline bool read_bool(const uint8_t* p, bool* out) {
  if (*p != 0xc2 && *p != 0xc3) return false;
  *out = *p == 0xc3;
  return true;
}

// Writers, for keys built natively from JavaScript scalars.
inline void write_array_header(std::string* out, uint32_t n) {
  if (n < 16) { out->push_back(char(0x90 | n)); return; }
  out->push_back(char(0xdd));
  for (int s = 24; s >= 0; s -= 8) out->push_back(char(n >> s));
}

// A number as 9 bytes at out: an integral one in [-2^63, 2^64) as uint64 (0xcf) or int64 (0xd3),
// anything else as float64 (0xcb). Returns 9.
inline size_t write_double(uint8_t* out, double d) {
  uint64_t u;
  if (std::trunc(d) == d && d >= 0 && d < 18446744073709551616.0) {
    u = uint64_t(d);
    out[0] = 0xcf;
  } else if (std::trunc(d) == d && d < 0 && d >= -9223372036854775808.0) {
    u = uint64_t(int64_t(d));
    out[0] = 0xd3;
  } else {
    std::memcpy(&u, &d, 8);
    out[0] = 0xcb;
  }
  for (int i = 0; i < 8; i++) out[1 + i] = uint8_t(u >> (56 - 8 * i));
  return 9;
}

inline void write_double(std::string* out, double d) {
  uint8_t b[9];
  out->append(reinterpret_cast<const char*>(b), write_double(b, d));
}

inline void write_str(std::string* out, const char* s, size_t n) {
  out->push_back(char(0xdb));
  for (int sh = 24; sh >= 0; sh -= 8) out->push_back(char(uint32_t(n) >> sh));
  out->append(s, n);
}

inline void write_bool(std::string* out, bool b) { out->push_back(char(b ? 0xc3 : 0xc2)); }

}  // namespace ce::mp
