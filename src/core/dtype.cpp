#include "core/dtype.hpp"

#include <array>

namespace normcheck {
namespace {

template <class T>
DTypeInfo make_info() {
  using traits = dtype_traits<T>;
  const FloatFormat& f = traits::format;
  return DTypeInfo{traits::id,
                   traits::name,
                   &f,
                   f.precision,
                   std::ldexp(1.0, -f.precision),
                   max_finite(f),
                   std::ldexp(1.0, f.emin),
                   std::ldexp(1.0, f.emin - (f.precision - 1)),
                   dtype_traits<default_accum_t<T>>::id};
}

const std::array<DTypeInfo, 4>& table() {
  static const std::array<DTypeInfo, 4> t = [] {
    std::array<DTypeInfo, 4> rows{};
    for_each_dtype([&](auto tag) {
      using T = decltype(tag);
      rows[static_cast<int>(dtype_traits<T>::id)] = make_info<T>();
    });
    return rows;
  }();
  return t;
}

}  // namespace

const DTypeInfo& dtype_info(DType id) { return table()[static_cast<int>(id)]; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& row : table())
    if (row.name == name) return row.id;
  return std::nullopt;
}

double round_to_dtype(double x, DType id) { return round_to_format_double(x, *dtype_info(id).format); }

uint64_t dtype_bits(double exact_value, DType id) {
  return encode_exact(exact_value, *dtype_info(id).format);
}

double dtype_value(uint64_t bits, DType id) { return decode_bits(bits, *dtype_info(id).format); }

bool representable(double x, DType id) {
  if (std::isnan(x)) return true;
  return round_to_dtype(x, id) == x;
}

}  // namespace normcheck
