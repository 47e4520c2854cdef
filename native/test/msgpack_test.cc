// msgpack.h: mp::check() accepts exactly the complete, well-formed values and refuses every
// truncation of them, at every byte position, without reading past the end. Each prefix is
// copied into a heap block of exactly its size, so AddressSanitizer reports any read beyond it.
#include "msgpack.h"

#include <memory>
#include <vector>

#include "test_util.h"

using test::expect;
using test::Mp;

namespace {

bool check_exact(const std::string& bytes, size_t n) {
  std::unique_ptr<uint8_t[]> block(new uint8_t[n == 0 ? 1 : n]);
  std::memcpy(block.get(), bytes.data(), n);
  const uint8_t* end = block.get() + n;
  const uint8_t* r = ce::mp::check(block.get(), end);
  expect(r == nullptr || (r > block.get() && r <= end), "check() returned a pointer outside the value");
  return r == end;
}

void every_prefix_refused(const std::string& what, const std::string& bytes) {
  expect(check_exact(bytes, bytes.size()), what, ": the whole value is refused");
  for (size_t n = 0; n < bytes.size(); n++) expect(!check_exact(bytes, n), what, ": a prefix of ", n, " bytes is accepted");
}

}  // namespace

int main() {
  const std::string long_str(300, 'x'), mid_str(40, 'y'), huge_str(70000, 'z');
  every_prefix_refused("fixstr tuple", Mp().array(3).uint(1).str("hello").integer(-5).str());
  every_prefix_refused("str8/str16", Mp().array(2).str(mid_str).str(long_str).str());
  every_prefix_refused("str32", Mp().array(1).str(huge_str).str());
  // Issue 14: a value that is the last of its input, cut one byte short, must be refused at every
  // cut, and check() must never answer a pointer past the end (a bounds check one byte too loose,
  // `skip > left + 1`, answers end + 1 for a top-level string, and reads one byte past the input
  // for a string at the end of a tuple: ASan sees that read, the pointer check sees the answer).
  every_prefix_refused("top-level fixstr", Mp().str("hello").str());
  every_prefix_refused("top-level str8", Mp().str(mid_str).str());
  every_prefix_refused("top-level str16", Mp().str(long_str).str());
  every_prefix_refused("top-level bin8", Mp().bin(mid_str).str());
  every_prefix_refused("top-level multi-byte utf-8", Mp().str("\xe2\x82\xac\xf0\x9f\x98\x80").str());
  every_prefix_refused("tuple ending in a fixstr", Mp().array(2).uint(1).str("z").str());
  every_prefix_refused("tuple ending in a str8", Mp().array(2).uint(1).str(mid_str).str());
  every_prefix_refused("tuple ending in a bin8", Mp().array(2).uint(1).bin(mid_str).str());
  every_prefix_refused("tuple ending in a nested str16", Mp().array(2).uint(1).array(1).str(long_str).str());
  // The 32-bit headers (array32, map32) and bin16/bin32, as msgpackr rarely writes them.
  every_prefix_refused("array32", Mp().raw(std::string("\xdd\x00\x00\x00\x02", 5)).uint(1).str("ab").str());
  every_prefix_refused("map32", Mp().array(1).raw(std::string("\xdf\x00\x00\x00\x01", 5)).str("k").uint(1).str());
  every_prefix_refused("bin16", Mp().array(1).raw(std::string("\xc5\x00\x03" "abc", 6)).str());
  every_prefix_refused("bin32", Mp().array(1).raw(std::string("\xc6\x00\x00\x00\x03" "abc", 8)).str());
  every_prefix_refused("array16", Mp().raw(std::string("\xdc\x00\x02", 3)).uint(1).uint(2).str());
  every_prefix_refused("map16 header", Mp().raw(std::string("\xde\x00\x01", 3)).uint(1).uint(2).str());
  every_prefix_refused("utf-8 multibyte", Mp().array(2).str("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80").uint(7).str());
  every_prefix_refused("nested arrays", Mp().array(3).array(2).array(1).uint(1).str("a").array(0).f64(1.5).str());
  every_prefix_refused("maps", Mp().array(2).map(2).str("k").uint(1).str("m").map(1).uint(2).boolean(true).nil().str());
  every_prefix_refused("map16", [] {
    Mp m;
    m.array(1).map(20);
    for (int i = 0; i < 20; i++) m.uint(i).str("v");
    return m.str();
  }());
  every_prefix_refused("array16", [] {
    Mp m;
    m.array(1).array(300);
    for (int i = 0; i < 300; i++) m.integer(i * 1000 - 150000);
    return m.str();
  }());
  every_prefix_refused("numbers", Mp().array(8).uint(200).uint(70000).uint(5000000000ull).integer(-100).integer(-40000)
                                      .integer(-5000000000ll).f32(1.5f).f64(-2.25).str());
  every_prefix_refused("bin and ext", Mp().array(3).bin("abc").raw(std::string("\xd4\x01\x02", 3))
                                          .raw(std::string("\xc7\x03\x05xyz", 6)).str());
  every_prefix_refused("fixext 16", Mp().array(1).raw(std::string("\xd8\x01", 2) + std::string(16, 'q')).str());

  // Malformed values are refused whatever comes after them.
  expect(!check_exact(std::string("\x91\xc1", 2), 2), "0xc1 accepted");
  expect(!check_exact(std::string("\x91\xa2\xed\xa0", 4), 4), "a lone surrogate accepted");
  // The edges of the UTF-8 rules (issue 14): both ends of the surrogate range are refused, their
  // neighbours accepted; the largest code point is accepted and the next one refused.
  expect(!check_exact(std::string("\x91\xa3\xed\xa0\x80", 5), 5), "the surrogate U+D800 accepted");
  expect(!check_exact(std::string("\x91\xa3\xed\xbf\xbf", 5), 5), "the surrogate U+DFFF accepted");
  expect(check_exact(std::string("\x91\xa3\xed\x9f\xbf", 5), 5), "U+D7FF refused");
  expect(check_exact(std::string("\x91\xa3\xee\x80\x80", 5), 5), "U+E000 refused");
  expect(check_exact(std::string("\x91\xa4\xf4\x8f\xbf\xbf", 6), 6), "U+10FFFF refused");
  expect(!check_exact(std::string("\x91\xa4\xf4\x90\x80\x80", 6), 6), "U+110000 accepted");
  expect(!check_exact(std::string("\x91\xa3\xe0\x9f\xbf", 5), 5), "an overlong 3-byte encoding (U+07FF) accepted");
  expect(check_exact(std::string("\x91\xa3\xe0\xa0\x80", 5), 5), "U+0800 refused");
  expect(!check_exact(std::string("\x91\xa2\xc0\x80", 4), 4), "an overlong encoding accepted");
  expect(!check_exact(std::string("\xdd\xff\xff\xff\xff\x01", 6), 6), "a 4G-element header over 1 byte accepted");
  expect(!check_exact(std::string("\xdf\xff\xff\xff\xff\x01\x01", 7), 7), "a 4G-entry map over 2 bytes accepted");
  std::string deep;
  for (int i = 0; i <= ce::mp::kMaxDepth; i++) deep.push_back(char(0x91));
  deep.push_back(0x01);
  expect(!check_exact(deep, deep.size()), "nesting deeper than kMaxDepth accepted");
  std::string ok_deep(deep.begin() + 1, deep.end());
  expect(check_exact(ok_deep, ok_deep.size()), "nesting of exactly kMaxDepth refused");

  // Navigation over a checked tuple.
  const Mp t = Mp().array(4).str(long_str).map(1).uint(1).array(2).uint(2).uint(3).f64(9.5).uint(42);
  expect(check_exact(t.str(), t.size()), "navigation tuple refused");
  const uint8_t* f3 = ce::mp::field(t.data(), 3);
  ce::mp::Num v;
  expect(f3 != nullptr && ce::mp::read_num(f3, &v) && v.kind == ce::mp::Num::kUint && v.u == 42, "field(3) is not 42");
  expect(ce::mp::field(t.data(), 4) == nullptr, "field(4) of a 4-field tuple");
  expect(ce::mp::next(t.data()) == t.data() + t.size(), "next() of the whole tuple");
  // field()'s table of sizes (kFixedSize) agrees with next() on a value of every first byte that
  // has one, and field() finds each field of a tuple holding one value of every encoding.
  std::vector<std::string> values;
  for (int c = 0; c < 256; c++) {
    if (ce::mp::kFixedSize[uint8_t(c)] == 0) continue;
    // The first byte, then enough payload for any fixed-size value (and a fixstr's characters).
    std::string v(1, char(c));
    v += std::string(ce::mp::kFixedSize[uint8_t(c)] - 1, 'a');
    values.push_back(v);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
    expect(ce::mp::next(p) == p + ce::mp::kFixedSize[uint8_t(c)], "kFixedSize disagrees with next() for first byte ", c);
  }
  for (const std::string& sized : {Mp().str(mid_str).str(), Mp().str(long_str).str(), Mp().bin("abc").str(),
                                    Mp().array(2).uint(1).str("x").str(), Mp().map(1).uint(1).uint(2).str(),
                                    std::string("\xc7\x03\x05xyz", 6)}) {
    expect(ce::mp::kFixedSize[uint8_t(sized[0])] == 0, "kFixedSize gives a size to a sized value");
    values.push_back(sized);
  }
  Mp all;
  all.raw(std::string("\xdc", 1) + char(values.size() >> 8) + char(values.size() & 0xff));
  for (const std::string& v : values) all.raw(v);
  const uint8_t* at = all.data() + 3;
  for (uint32_t i = 0; i < values.size(); i++) {
    expect(ce::mp::field(all.data(), i) == at, "field(", i, ") of the every-encoding tuple");
    at += values[i].size();
  }
  std::puts("msgpack_test: ok");
  return 0;
}
