// Well-known keys and values of Karpenter's API (karpenter.sh and the AWS provider's
// karpenter.k8s.aws): labels, annotations, taints, finalizers, the label-key normalisation map,
// the restricted label domains and the taints Karpenter treats as ephemeral, and the predicates
// over keys (normalisation, well-known, restricted; labels.cc). Restricted-key validation of
// requirements lives in dovetail/scheduling/requirements.h. Constants and pure functions;
// thread-safe.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <utility>

namespace dovetail::apis::v1 {

// ---- API groups ---------------------------------------------------------------------------------
inline constexpr std::string_view kGroup = "karpenter.sh";
inline constexpr std::string_view kCompatibilityGroup = "compatibility.karpenter.sh";
inline constexpr std::string_view kAwsGroup = "karpenter.k8s.aws";
inline constexpr std::string_view kAwsCompatibilityGroup = "compatibility.karpenter.k8s.aws";

// ---- Kubernetes well-known node labels ----------------------------------------------------------
inline constexpr std::string_view kLabelHostname = "kubernetes.io/hostname";
inline constexpr std::string_view kLabelTopologyZone = "topology.kubernetes.io/zone";
inline constexpr std::string_view kLabelTopologyRegion = "topology.kubernetes.io/region";
inline constexpr std::string_view kLabelInstanceType = "node.kubernetes.io/instance-type";
inline constexpr std::string_view kLabelArch = "kubernetes.io/arch";
inline constexpr std::string_view kLabelOS = "kubernetes.io/os";
inline constexpr std::string_view kLabelWindowsBuild = "node.kubernetes.io/windows-build";
// Added when Karpenter drains a node, so that load balancers stop sending it traffic.
inline constexpr std::string_view kLabelExcludeFromExternalLoadBalancers =
    "node.kubernetes.io/exclude-from-external-load-balancers";
inline constexpr std::string_view kExcludeFromExternalLoadBalancersValue = "karpenter";

// Deprecated beta keys, rewritten to their GA form wherever a key is read (see kNormalizedLabels).
inline constexpr std::string_view kLabelFailureDomainBetaZone =
    "failure-domain.beta.kubernetes.io/zone";
inline constexpr std::string_view kLabelFailureDomainBetaRegion =
    "failure-domain.beta.kubernetes.io/region";
inline constexpr std::string_view kLabelBetaArch = "beta.kubernetes.io/arch";
inline constexpr std::string_view kLabelBetaOS = "beta.kubernetes.io/os";
inline constexpr std::string_view kLabelBetaInstanceType = "beta.kubernetes.io/instance-type";
// The AWS EBS CSI driver's topology key.
inline constexpr std::string_view kLabelEbsCsiZone = "topology.ebs.csi.aws.com/zone";

inline constexpr std::string_view kArchitectureAmd64 = "amd64";
inline constexpr std::string_view kArchitectureArm64 = "arm64";
inline constexpr std::string_view kOSLinux = "linux";
inline constexpr std::string_view kOSWindows = "windows";

// ---- karpenter.sh labels ------------------------------------------------------------------------
inline constexpr std::string_view kNodePoolLabelKey = "karpenter.sh/nodepool";
inline constexpr std::string_view kCapacityTypeLabelKey = "karpenter.sh/capacity-type";
inline constexpr std::string_view kNodeRegisteredLabelKey = "karpenter.sh/registered";
inline constexpr std::string_view kNodeInitializedLabelKey = "karpenter.sh/initialized";
// On a Node: Karpenter does not sync the NodeClaim's taints onto it.
inline constexpr std::string_view kNodeDoNotSyncTaintsLabelKey = "karpenter.sh/do-not-sync-taints";

inline constexpr std::string_view kCapacityTypeOnDemand = "on-demand";
inline constexpr std::string_view kCapacityTypeSpot = "spot";
inline constexpr std::string_view kCapacityTypeReserved = "reserved";
inline constexpr std::array<std::string_view, 3> kCapacityTypes = {
    kCapacityTypeOnDemand, kCapacityTypeSpot, kCapacityTypeReserved};

// ---- karpenter.sh annotations -------------------------------------------------------------------
// Pod: "true" or a Go duration since the pod started; Node: only "true".
inline constexpr std::string_view kDoNotDisruptAnnotationKey = "karpenter.sh/do-not-disrupt";
inline constexpr std::string_view kNodePoolHashAnnotationKey = "karpenter.sh/nodepool-hash";
inline constexpr std::string_view kNodePoolHashVersionAnnotationKey =
    "karpenter.sh/nodepool-hash-version";
inline constexpr std::string_view kNodePoolHashVersion = "v3";
inline constexpr std::string_view kNodeClaimTerminationTimestampAnnotationKey =
    "karpenter.sh/nodeclaim-termination-timestamp";
inline constexpr std::string_view kNodeClaimMinValuesRelaxedAnnotationKey =
    "karpenter.sh/nodeclaim-min-values-relaxed";
inline constexpr std::string_view kPriceOverlayAppliedAnnotationKey =
    "karpenter.sh/price-overlay-applied";
inline constexpr std::string_view kCapacityOverlayAppliedAnnotationKey =
    "karpenter.sh/capacity-overlay-applied";
inline constexpr std::string_view kRequestedDraDriversAnnotationKey =
    "karpenter.sh/requested-dra-drivers";
// v1beta1 -> v1 migration only (honoured by v1.0).
inline constexpr std::string_view kV1beta1KubeletConversionAnnotationKey =
    "compatibility.karpenter.sh/v1beta1-kubelet-conversion";

// Keys removed in v1.0, still recognised by the converters.
inline constexpr std::string_view kLegacyProvisionerNameLabelKey = "karpenter.sh/provisioner-name";
inline constexpr std::string_view kLegacyProvisionerHashAnnotationKey =
    "karpenter.sh/provisioner-hash";
inline constexpr std::string_view kLegacyDoNotEvictAnnotationKey = "karpenter.sh/do-not-evict";
inline constexpr std::string_view kLegacyDoNotConsolidateAnnotationKey =
    "karpenter.sh/do-not-consolidate";
inline constexpr std::string_view kLegacyManagedByTagKey = "karpenter.sh/managed-by";

// ---- karpenter.sh taints and finalizer ----------------------------------------------------------
// karpenter.sh/disrupted:NoSchedule, added while a node is disrupted or terminated.
inline constexpr std::string_view kDisruptedTaintKey = "karpenter.sh/disrupted";
// karpenter.sh/unregistered:NoExecute, registered by kubelet and removed by Karpenter.
inline constexpr std::string_view kUnregisteredTaintKey = "karpenter.sh/unregistered";
// v1beta1's disruption taint (karpenter.sh/disruption=disrupting:NoSchedule), for conversion.
inline constexpr std::string_view kLegacyDisruptionTaintKey = "karpenter.sh/disruption";
inline constexpr std::string_view kLegacyDisruptionTaintValue = "disrupting";

// On NodeClaims and Nodes.
inline constexpr std::string_view kTerminationFinalizer = "karpenter.sh/termination";

// ---- Known ephemeral taints ---------------------------------------------------------------------
// Taints that Karpenter ignores on a node that is not yet initialized and that must be gone for it
// to be initialized. Matched by key and effect (the value is not compared), plus every key under
// kEphemeralTaintKeyPrefix whatever its effect.
enum class EphemeralTaintEffect { kNoSchedule, kNoExecute };
struct EphemeralTaint {
  std::string_view key;
  std::string_view value;
  EphemeralTaintEffect effect;
};
inline constexpr std::string_view kTaintNodeNotReady = "node.kubernetes.io/not-ready";
inline constexpr std::string_view kTaintNodeUnreachable = "node.kubernetes.io/unreachable";
inline constexpr std::string_view kTaintExternalCloudProvider =
    "node.cloudprovider.kubernetes.io/uninitialized";
inline constexpr std::array<EphemeralTaint, 5> kKnownEphemeralTaints = {{
    {kTaintNodeNotReady, "", EphemeralTaintEffect::kNoSchedule},
    {kTaintNodeNotReady, "", EphemeralTaintEffect::kNoExecute},
    {kTaintNodeUnreachable, "", EphemeralTaintEffect::kNoSchedule},
    {kTaintExternalCloudProvider, "true", EphemeralTaintEffect::kNoSchedule},
    {kUnregisteredTaintKey, "", EphemeralTaintEffect::kNoExecute},
}};
// Node Readiness Controller taints [v1.13].
inline constexpr std::string_view kEphemeralTaintKeyPrefix = "readiness.k8s.io/";

// ---- karpenter.k8s.aws --------------------------------------------------------------------------
inline constexpr std::string_view kLabelTopologyZoneId = "topology.k8s.aws/zone-id";

inline constexpr std::string_view kLabelCapacityReservationId =
    "karpenter.k8s.aws/capacity-reservation-id";
inline constexpr std::string_view kLabelCapacityReservationType =
    "karpenter.k8s.aws/capacity-reservation-type";
inline constexpr std::string_view kLabelCapacityReservationInterruptible =
    "karpenter.k8s.aws/capacity-reservation-interruptible";
inline constexpr std::string_view kLabelInstanceHypervisor =
    "karpenter.k8s.aws/instance-hypervisor";
inline constexpr std::string_view kLabelInstanceEncryptionInTransitSupported =
    "karpenter.k8s.aws/instance-encryption-in-transit-supported";
inline constexpr std::string_view kLabelNitroSandbox = "karpenter.k8s.aws/nitro-sandbox";
inline constexpr std::string_view kLabelInstanceCategory = "karpenter.k8s.aws/instance-category";
inline constexpr std::string_view kLabelInstanceCapabilityFlex =
    "karpenter.k8s.aws/instance-capability-flex";
inline constexpr std::string_view kLabelInstanceFamily = "karpenter.k8s.aws/instance-family";
inline constexpr std::string_view kLabelInstanceGeneration =
    "karpenter.k8s.aws/instance-generation";
inline constexpr std::string_view kLabelInstanceSize = "karpenter.k8s.aws/instance-size";
inline constexpr std::string_view kLabelInstanceLocalNvme = "karpenter.k8s.aws/instance-local-nvme";
inline constexpr std::string_view kLabelInstanceCpu = "karpenter.k8s.aws/instance-cpu";
inline constexpr std::string_view kLabelInstanceCpuManufacturer =
    "karpenter.k8s.aws/instance-cpu-manufacturer";
inline constexpr std::string_view kLabelInstanceCpuSustainedClockSpeedMhz =
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz";
inline constexpr std::string_view kLabelInstanceMemory = "karpenter.k8s.aws/instance-memory";
inline constexpr std::string_view kLabelInstanceEbsBandwidth =
    "karpenter.k8s.aws/instance-ebs-bandwidth";
inline constexpr std::string_view kLabelInstanceNetworkBandwidth =
    "karpenter.k8s.aws/instance-network-bandwidth";
inline constexpr std::string_view kLabelInstanceGpuName = "karpenter.k8s.aws/instance-gpu-name";
inline constexpr std::string_view kLabelInstanceGpuManufacturer =
    "karpenter.k8s.aws/instance-gpu-manufacturer";
inline constexpr std::string_view kLabelInstanceGpuCount = "karpenter.k8s.aws/instance-gpu-count";
inline constexpr std::string_view kLabelInstanceGpuMemory = "karpenter.k8s.aws/instance-gpu-memory";
inline constexpr std::string_view kLabelInstanceAcceleratorName =
    "karpenter.k8s.aws/instance-accelerator-name";
inline constexpr std::string_view kLabelInstanceAcceleratorManufacturer =
    "karpenter.k8s.aws/instance-accelerator-manufacturer";
inline constexpr std::string_view kLabelInstanceAcceleratorCount =
    "karpenter.k8s.aws/instance-accelerator-count";
inline constexpr std::string_view kLabelInstanceTenancy = "karpenter.k8s.aws/instance-tenancy";
inline constexpr std::string_view kLabelPlacementGroupId = "karpenter.k8s.aws/placement-group-id";
inline constexpr std::string_view kLabelPlacementGroupPartition =
    "karpenter.k8s.aws/placement-group-partition";
inline constexpr std::string_view kLabelNodeClass = "karpenter.k8s.aws/ec2nodeclass";

inline constexpr std::string_view kInstanceTenancyDefault = "default";
inline constexpr std::string_view kInstanceTenancyDedicated = "dedicated";
inline constexpr std::array<std::string_view, 2> kInstanceTenancies = {kInstanceTenancyDefault,
                                                                       kInstanceTenancyDedicated};
inline constexpr std::string_view kCapacityReservationTypeDefault = "default";
inline constexpr std::string_view kCapacityReservationTypeCapacityBlock = "capacity-block";

inline constexpr std::string_view kEC2NodeClassHashAnnotationKey =
    "karpenter.k8s.aws/ec2nodeclass-hash";
inline constexpr std::string_view kEC2NodeClassHashVersionAnnotationKey =
    "karpenter.k8s.aws/ec2nodeclass-hash-version";
inline constexpr std::string_view kInstanceProfileNameAnnotationKey =
    "karpenter.k8s.aws/instance-profile-name";
inline constexpr std::string_view kTaggedAnnotationKey = "karpenter.k8s.aws/tagged";
// v1beta1 -> v1 migration only.
inline constexpr std::string_view kV1beta1UbuntuAnnotationKey =
    "compatibility.karpenter.k8s.aws/v1beta1-ubuntu";
inline constexpr std::string_view kLegacyNodeTemplateHashAnnotationKey =
    "karpenter.k8s.aws/nodetemplate-hash";
inline constexpr std::string_view kLegacyInstancePodsLabelKey = "karpenter.k8s.aws/instance-pods";

// On EC2NodeClasses.
inline constexpr std::string_view kAwsTerminationFinalizer = "karpenter.k8s.aws/termination";

// Tag keys Karpenter puts on cloud resources; users may not set them in EC2NodeClass tags.
inline constexpr std::string_view kTagNodePool = "karpenter.sh/nodepool";
inline constexpr std::string_view kTagNodeClaim = "karpenter.sh/nodeclaim";
inline constexpr std::string_view kTagNodeClass = "karpenter.k8s.aws/ec2nodeclass";
inline constexpr std::string_view kTagEksClusterName = "eks:eks-cluster-name";
inline constexpr std::string_view kTagClusterPrefix = "kubernetes.io/cluster/";

// ---- Well-known labels --------------------------------------------------------------------------
// Keys Karpenter knows the values of (from instance types and offerings). They may be left
// undefined by a NodePool and still be selected by pods, and they are exempt from the restricted
// domains below.
inline constexpr std::array<std::string_view, 38> kWellKnownLabels = {
    // core
    kNodePoolLabelKey,
    kLabelTopologyZone,
    kLabelTopologyRegion,
    kLabelInstanceType,
    kLabelArch,
    kLabelOS,
    kCapacityTypeLabelKey,
    kLabelWindowsBuild,
    // AWS
    kLabelTopologyZoneId,
    kLabelCapacityReservationId,
    kLabelCapacityReservationType,
    kLabelCapacityReservationInterruptible,
    kLabelInstanceHypervisor,
    kLabelInstanceEncryptionInTransitSupported,
    kLabelNitroSandbox,
    kLabelInstanceCategory,
    kLabelInstanceCapabilityFlex,
    kLabelInstanceFamily,
    kLabelInstanceGeneration,
    kLabelInstanceSize,
    kLabelInstanceLocalNvme,
    kLabelInstanceCpu,
    kLabelInstanceCpuManufacturer,
    kLabelInstanceCpuSustainedClockSpeedMhz,
    kLabelInstanceMemory,
    kLabelInstanceEbsBandwidth,
    kLabelInstanceNetworkBandwidth,
    kLabelInstanceGpuName,
    kLabelInstanceGpuManufacturer,
    kLabelInstanceGpuCount,
    kLabelInstanceGpuMemory,
    kLabelInstanceAcceleratorName,
    kLabelInstanceAcceleratorManufacturer,
    kLabelInstanceAcceleratorCount,
    kLabelInstanceTenancy,
    kLabelPlacementGroupId,
    kLabelPlacementGroupPartition,
    kLabelNodeClass,
};

// Well-known labels with a closed set of values. A requirement `In` with none of them is invalid;
// minValues above the number of known values is invalid.
struct WellKnownValues {
  std::string_view key;
  std::span<const std::string_view> values;
};
inline constexpr std::array<WellKnownValues, 2> kWellKnownValues = {{
    {kCapacityTypeLabelKey, kCapacityTypes},
    {kLabelInstanceTenancy, kInstanceTenancies},
}};

// ---- Label-key normalisation --------------------------------------------------------------------
// Deprecated or provider-specific key -> the key Karpenter uses. Applied to every requirement and
// label key Karpenter reads.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kNormalizedLabels = {{
    {kLabelFailureDomainBetaZone, kLabelTopologyZone},
    {kLabelFailureDomainBetaRegion, kLabelTopologyRegion},
    {kLabelBetaArch, kLabelArch},
    {kLabelBetaOS, kLabelOS},
    {kLabelBetaInstanceType, kLabelInstanceType},
    {kLabelEbsCsiZone, kLabelTopologyZone},
}};

// ---- Restricted keys ----------------------------------------------------------------------------
// Keys in these domains (matched as a suffix of the key's prefix, so sub-domains count) may not be
// used in NodePool requirements or labels unless they are well-known; pods selecting them are
// ignored by provisioning.
inline constexpr std::array<std::string_view, 2> kRestrictedLabelDomains = {kGroup, kAwsGroup};
// Individual keys that are restricted whatever their domain.
inline constexpr std::array<std::string_view, 1> kRestrictedLabels = {kLabelHostname};
// Forbidden in NodePool requirements and template labels (Karpenter sets it), allowed in pods.
inline constexpr std::string_view kNodePoolOnlyRestrictedLabel = kNodePoolLabelKey;

// The Kubernetes domains. Karpenter's CRD schema restricts them in NodePool template labels and
// requirement keys except for the exception domains below and the well-known labels (including
// the beta keys of kNormalizedLabels). Used by apis/validation; the runtime checks above do not
// restrict these domains.
inline constexpr std::array<std::string_view, 2> kK8sLabelDomains = {"kubernetes.io", "k8s.io"};
inline constexpr std::array<std::string_view, 3> kLabelDomainExceptions = {
    "kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io"};

// ---- Key predicates (labels.cc) ---------------------------------------------------------------
// The key Karpenter uses for `key` (kNormalizedLabels), or `key` itself.
std::string_view NormalizeLabelKey(std::string_view key);

// A key of kWellKnownLabels. The key is not normalised: pass normalised keys.
bool IsWellKnownLabel(std::string_view key);

// The part of `key` before '/', or "" when there is none.
std::string_view LabelDomain(std::string_view key);

// Restricted for NodePools and pods: not well-known, and kubernetes.io/hostname or a key whose
// domain ends with a restricted domain (karpenter.sh, karpenter.k8s.aws; a plain suffix match, as
// upstream, so sub-domains count).
bool IsRestrictedLabel(std::string_view key);
// Labels Karpenter must not inject onto a node itself: well-known labels (the cloud provider sets
// them) and restricted keys.
bool IsRestrictedNodeLabel(std::string_view key);

}  // namespace dovetail::apis::v1
