#include "runtime/kernels/onednn_util.h"

#include <vector>

namespace cleave::runtime::detail {

dnnl::engine const& cpu_engine() {
  static dnnl::engine const engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory scratchpad(dnnl::memory::desc const& desc) {
  // 64-byte aligned, grown as needed, reused by every call on this thread.
  thread_local std::vector<std::byte> buffer;
  std::size_t need = desc.get_size() + 64;
  if (buffer.size() < need) buffer.resize(need);
  auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
  void* aligned = buffer.data() + ((64 - address % 64) % 64);
  return dnnl::memory(desc, cpu_engine(), aligned);
}

Dims box_sizes(tdl::Box const& box) {
  Dims out;
  for (auto const& iv : box)
    out.push_back(iv.size());
  return out;
}

Dims row_major_strides(Dims const& sizes) {
  Dims out(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    out[i - 1] = out[i] * std::max<dnnl::memory::dim>(sizes[i], 1);
  return out;
}

std::string make_key(std::string_view tag, std::initializer_list<Dims> parts) {
  std::string key(tag);
  for (auto const& part : parts) {
    key += ':';
    for (auto v : part) {
      key += std::to_string(v);
      key += ',';
    }
  }
  return key;
}

Status execute(std::string_view kernel, dnnl::primitive const& primitive,
               dnnl::memory::desc const& scratchpad_desc,
               std::unordered_map<int, dnnl::memory> args) {
  try {
    if (scratchpad_desc.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(scratchpad_desc));
    auto& stream = thread_stream();
    primitive.execute(stream, args);
    stream.wait();
  } catch (dnnl::error const& e) {
    return Error(ErrorCode::unsupported, std::string(kernel) + ": oneDNN failed: " + e.what() +
                                             " (status " +
                                             std::to_string(static_cast<int>(e.status)) + ")");
  }
  return Status::ok();
}

Status check_data(std::string_view kernel, KernelCall const& call) {
  if (call.output.data == nullptr)
    return Error(ErrorCode::invalid_argument, std::string(kernel) + ": the output has no data");
  for (std::size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i].data == nullptr && !call.piece->inputs[i].empty())
      return Error(ErrorCode::invalid_argument,
                   std::string(kernel) + ": input " + std::to_string(i) + " has no data");
  return Status::ok();
}

bool inputs_dense(KernelCall const& call) {
  if (call.piece == nullptr || call.bound == nullptr || call.op == nullptr) return false;
  if (call.inputs.size() != call.piece->inputs.size()) return false;
  for (auto const& region : call.piece->inputs)
    if (region.empty() || region.has_padding()) return false;
  return true;
}

}  // namespace cleave::runtime::detail
