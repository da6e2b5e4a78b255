#include "cluster/cluster_builder.h"

namespace cleave::cluster {

NodeId ClusterBuilder::add_node(std::string name, Bytes host_memory) {
  parts_.nodes.push_back({std::move(name), host_memory});
  return NodeId(static_cast<NodeId::value_type>(parts_.nodes.size() - 1));
}

DeviceId ClusterBuilder::add_device(Device device) {
  parts_.devices.push_back(std::move(device));
  return DeviceId(static_cast<DeviceId::value_type>(parts_.devices.size() - 1));
}

SwitchId ClusterBuilder::add_switch(std::string name, SwitchKind kind, NodeId node) {
  parts_.switches.push_back({std::move(name), kind, node});
  return SwitchId(static_cast<SwitchId::value_type>(parts_.switches.size() - 1));
}

LinkId ClusterBuilder::add_link(LinkKind kind, Endpoint a, Endpoint b, BytesPerSecond bandwidth,
                                Seconds latency) {
  links_.push_back({kind, a, b, bandwidth, latency});
  return LinkId(static_cast<LinkId::value_type>(links_.size() - 1));
}

LinkId ClusterBuilder::add_host_link(DeviceId device, BytesPerSecond bandwidth, Seconds latency) {
  NodeId node =
      device.value() < parts_.devices.size() ? parts_.devices[device.value()].node : NodeId();
  return add_link(LinkKind::host, device, HostOf{node}, bandwidth, latency);
}

ClusterParts ClusterBuilder::finish() const {
  ClusterParts parts = parts_;
  auto hosts_from = static_cast<std::uint32_t>(parts.devices.size());
  auto switches_from = hosts_from + static_cast<std::uint32_t>(parts.nodes.size());
  // Out-of-range references stay out of range, for Cluster::create to report.
  auto vertex = [&](Endpoint const& e) {
    if (auto const* d = std::get_if<DeviceId>(&e))
      return VertexId(d->value() < hosts_from ? d->value() : VertexId::invalid_value);
    if (auto const* h = std::get_if<HostOf>(&e))
      return VertexId(h->node.value() < parts.nodes.size() ? hosts_from + h->node.value()
                                                           : VertexId::invalid_value);
    auto s = std::get<SwitchId>(e);
    return VertexId(s.value() < parts.switches.size() ? switches_from + s.value()
                                                      : VertexId::invalid_value);
  };
  for (PendingLink const& l : links_)
    parts.links.push_back({l.kind, vertex(l.a), vertex(l.b), l.bandwidth, l.latency});
  return parts;
}

}  // namespace cleave::cluster
