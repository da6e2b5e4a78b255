// Builds ClusterParts by adding nodes, devices, switches and links in any order; link endpoints
// are given as the thing they attach to (a device, a node's host, a switch), and finish() turns
// them into vertex ids once all counts are known. Used by the presets and by tests.
#pragma once

#include <variant>

#include "cluster/cluster.h"

namespace cleave::cluster {

struct HostOf {
  NodeId node;
};
using Endpoint = std::variant<DeviceId, HostOf, SwitchId>;

class ClusterBuilder {
 public:
  explicit ClusterBuilder(std::string name) { parts_.name = std::move(name); }

  void add_source(std::string line) { parts_.sources.push_back(std::move(line)); }
  NodeId add_node(std::string name, Bytes host_memory);
  DeviceId add_device(Device device);
  SwitchId add_switch(std::string name, SwitchKind kind, NodeId node = NodeId());
  LinkId add_link(LinkKind kind, Endpoint a, Endpoint b, BytesPerSecond bandwidth, Seconds latency);
  // The device's host link: kind host, to the host of the device's node.
  LinkId add_host_link(DeviceId device, BytesPerSecond bandwidth, Seconds latency);

  // The parts, for Cluster::create to verify (or for tests to break first).
  ClusterParts finish() const;
  Expected<Cluster> build() const { return Cluster::create(finish()); }

 private:
  struct PendingLink {
    LinkKind kind;
    Endpoint a, b;
    BytesPerSecond bandwidth;
    Seconds latency;
  };
  ClusterParts parts_;
  std::vector<PendingLink> links_;
};

}  // namespace cleave::cluster
