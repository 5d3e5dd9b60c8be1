// Command fixture-bench feeds a frozen fixture (the manifests and catalog directory that
// `dovetail simulate -f DIR --catalog DIR2` reads) to upstream Karpenter's scheduler through its
// public packages, and prints one JSON object: pods, pods scheduled, NodeClaims, cost per hour,
// solve seconds, pods/s and peak RSS.
//
// It is a comparator for Dovetail's benchmarks: it only calls sigs.k8s.io/karpenter, it contains
// none of its code. The instance types are built from Dovetail's catalog CSV format with the
// formulas documented in dovetail/cloudprovider/aws_catalog.h (capacity, overhead, labels,
// offerings), so both systems plan against the same instance types and prices.
//
// Usage: fixture-bench -f DIR [-f DIR...] --catalog DIR [--region R] [--zones a,b,c]
//
//	[--concurrency N] [--runs N]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/test"
	nodepoolutils "sigs.k8s.io/karpenter/pkg/utils/nodepool"
)

// Label keys of the AWS provider's instance types (facts of the API, spelled as Dovetail's
// dovetail/apis/v1/labels.h spells them).
const (
	awsPrefix       = "karpenter.k8s.aws/"
	labelZoneID     = "topology.k8s.aws/zone-id"
	labelCategory   = awsPrefix + "instance-category"
	labelFamily     = awsPrefix + "instance-family"
	labelGeneration = awsPrefix + "instance-generation"
	labelSize       = awsPrefix + "instance-size"
	labelCPU        = awsPrefix + "instance-cpu"
	labelCPUManuf   = awsPrefix + "instance-cpu-manufacturer"
	labelCPUClock   = awsPrefix + "instance-cpu-sustained-clock-speed-mhz"
	labelMemory     = awsPrefix + "instance-memory"
	labelHypervisor = awsPrefix + "instance-hypervisor"
	labelEncryption = awsPrefix + "instance-encryption-in-transit-supported"
	labelFlex       = awsPrefix + "instance-capability-flex"
	labelLocalNvme  = awsPrefix + "instance-local-nvme"
	labelNetworkBW  = awsPrefix + "instance-network-bandwidth"
	labelEbsBW      = awsPrefix + "instance-ebs-bandwidth"
	labelGPUName    = awsPrefix + "instance-gpu-name"
	labelGPUManuf   = awsPrefix + "instance-gpu-manufacturer"
	labelGPUCount   = awsPrefix + "instance-gpu-count"
	labelGPUMemory  = awsPrefix + "instance-gpu-memory"
	labelAccName    = awsPrefix + "instance-accelerator-name"
	labelAccManuf   = awsPrefix + "instance-accelerator-manufacturer"
	labelAccCount   = awsPrefix + "instance-accelerator-count"
	labelTenancy    = awsPrefix + "instance-tenancy"
	labelNitroSbx   = awsPrefix + "nitro-sandbox"
	labelCRID       = awsPrefix + "capacity-reservation-id"
	labelCRType     = awsPrefix + "capacity-reservation-type"
	labelCRInterr   = awsPrefix + "capacity-reservation-interruptible"
	labelPGID       = awsPrefix + "placement-group-id"
	labelPGPart     = awsPrefix + "placement-group-partition"
)

var awsLabels = []string{
	labelZoneID, labelCategory, labelFamily, labelGeneration, labelSize, labelCPU, labelCPUManuf,
	labelCPUClock, labelMemory, labelHypervisor, labelEncryption, labelFlex, labelLocalNvme,
	labelNetworkBW, labelEbsBW, labelGPUName, labelGPUManuf, labelGPUCount, labelGPUMemory,
	labelAccName, labelAccManuf, labelAccCount, labelTenancy, labelNitroSbx, labelCRID, labelCRType,
	labelCRInterr, labelPGID, labelPGPart,
}

const (
	miB = int64(1) << 20
	giB = int64(1) << 30
	// Ephemeral storage capacity of every type (Dovetail's CatalogOptions default).
	ephemeralStorageGiB = 20
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type output struct {
	Pods           int     `json:"pods"`
	PodsScheduled  int     `json:"podsScheduled"`
	Unschedulable  int     `json:"unschedulable"`
	NodeClaims     int     `json:"nodeClaims"`
	PricePerHour   float64 `json:"pricePerHour"`
	SolveSeconds   float64 `json:"solveSeconds"`
	SolveOnlySecs  float64 `json:"solveOnlySeconds"`
	PodsPerSecond  float64 `json:"podsPerSecond"`
	PeakRSSBytes   int64   `json:"peakRssBytes"`
	InstanceTypes  int     `json:"instanceTypes"`
	NodePools      int     `json:"nodePools"`
	Runs           int     `json:"runs"`
	Concurrency    int     `json:"concurrency"`
	KarpenterPkg   string  `json:"karpenter"`
	UnpricedClaims int     `json:"unpricedNodeClaims"`
}

func main() {
	log.SetLogger(logging.NopLogger)
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var files stringList
	fsFlags := flag.NewFlagSet("fixture-bench", flag.ContinueOnError)
	fsFlags.Var(&files, "f", "manifest file or directory (repeatable)")
	catalogDir := fsFlags.String("catalog", "", "catalog directory (instance-types.csv, on-demand-prices.csv, optional spot-prices.csv)")
	region := fsFlags.String("region", "us-east-1", "region")
	zonesFlag := fsFlags.String("zones", "", "comma-separated zones (default: the region's a, b, c)")
	concurrency := fsFlags.Int("concurrency", 1, "scheduler NumConcurrentReconciles (upstream derives it from the controller's CPU request; the chart's default is 1 CPU)")
	runs := fsFlags.Int("runs", 1, "solves to run; timings are the fastest run's, plans are the first's")
	if err := fsFlags.Parse(os.Args[1:]); err != nil {
		return err
	}
	if len(files) == 0 || *catalogDir == "" {
		return errors.New("usage: fixture-bench -f DIR [-f ...] --catalog DIR [--region R] [--zones Z,...] [--concurrency N] [--runs N]")
	}
	if *runs < 1 || *concurrency < 1 {
		return errors.New("--runs and --concurrency must be at least 1")
	}
	for _, label := range awsLabels {
		v1.WellKnownLabels.Insert(label)
	}
	zones := []string{*region + "a", *region + "b", *region + "c"}
	if *zonesFlag != "" {
		zones = strings.Split(*zonesFlag, ",")
	}

	nodePools, pods, err := readManifests(files)
	if err != nil {
		return err
	}
	if len(nodePools) == 0 {
		return errors.New("no NodePool in the manifests")
	}
	instanceTypes, err := loadCatalog(*catalogDir, *region, zones)
	if err != nil {
		return err
	}

	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"),
		test.Options(test.OptionsFields{CPURequests: ptr(int64(*concurrency * 1000))}))
	nodepoolutils.OrderByWeight(nodePools)
	byPool := map[string][]*cloudprovider.InstanceType{}
	for _, np := range nodePools {
		byPool[np.Name] = instanceTypes
	}
	cloudProvider := fake.NewCloudProvider()
	cloudProvider.InstanceTypes = instanceTypes

	out := output{Pods: len(pods), InstanceTypes: len(instanceTypes), NodePools: len(nodePools),
		Runs: *runs, Concurrency: *concurrency, KarpenterPkg: karpenterVersion()}
	for i := 0; i < *runs; i++ {
		// Same options as upstream's provisioner passes (provisioner.go: reserved capacity fallback
		// disabled, concurrency from the CPU request, min values policy from the options).
		opts := []scheduling.Options{
			scheduling.DisableReservedCapacityFallback,
			scheduling.NumConcurrentReconciles(*concurrency),
			scheduling.MinValuesPolicy(options.FromContext(ctx).MinValuesPolicy),
		}
		client := fakecr.NewFakeClient()
		clk := &clock.RealClock{}
		cluster := state.NewCluster(clk, client, cloudProvider)
		start := time.Now()
		topology, err := scheduling.NewTopology(ctx, client, cluster, nil, nodePools, byPool, pods, opts...)
		if err != nil {
			return fmt.Errorf("creating topology: %w", err)
		}
		s := scheduling.NewScheduler(ctx, client, nodePools, cluster, nil, topology, byPool, nil,
			events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, opts...)
		solveStart := time.Now()
		results, err := s.Solve(ctx, pods)
		if err != nil {
			return fmt.Errorf("solve: %w", err)
		}
		results = results.TruncateInstanceTypes(ctx, scheduling.MaxInstanceTypes)
		end := time.Now()
		total, solveOnly := end.Sub(start).Seconds(), end.Sub(solveStart).Seconds()
		if i == 0 || total < out.SolveSeconds {
			out.SolveSeconds, out.SolveOnlySecs = total, solveOnly
		}
		if i == 0 {
			scheduled := 0
			price := 0.0
			for _, nc := range results.NewNodeClaims {
				scheduled += len(nc.Pods)
				p, ok := cheapestPrice(nc)
				if !ok {
					out.UnpricedClaims++
				}
				price += p
			}
			for _, en := range results.ExistingNodes {
				scheduled += len(en.Pods)
			}
			out.PodsScheduled = scheduled
			out.Unschedulable = len(results.PodErrors)
			out.NodeClaims = len(results.NewNodeClaims)
			out.PricePerHour = math.Round(price*1e6) / 1e6
		}
	}
	if out.SolveSeconds > 0 {
		out.PodsPerSecond = float64(len(pods)) / out.SolveSeconds
	}
	out.PeakRSSBytes = peakRSS()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func ptr[T any](v T) *T { return &v }

// cheapestPrice is what upstream would launch for the NodeClaim: the cheapest available offering,
// among its instance type options, compatible with its requirements.
func cheapestPrice(nc *scheduling.NodeClaim) (float64, bool) {
	best, found := 0.0, false
	for _, it := range nc.InstanceTypeOptions {
		ofs := it.Offerings.Available().Compatible(nc.Requirements)
		if len(ofs) == 0 {
			continue
		}
		if p := ofs.Cheapest().Price; !found || p < best {
			best, found = p, true
		}
	}
	return best, found
}

// karpenterVersion is the sigs.k8s.io/karpenter version this binary was built with.
func karpenterVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "sigs.k8s.io/karpenter" {
				return dep.Path + "@" + dep.Version
			}
		}
	}
	return "sigs.k8s.io/karpenter"
}

func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "VmHWM:") {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				kb, _ := strconv.ParseInt(fields[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// ---- manifests ----------------------------------------------------------------------------------

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// Kinds that carry nothing the scheduler reads in these fixtures.
var skippedKinds = map[string]bool{
	"EC2NodeClass": true, "KWOKNodeClass": true, "Namespace": true, "ConfigMap": true,
	"Service": true, "PodDisruptionBudget": true,
}

func readManifests(paths []string) ([]*v1.NodePool, []*corev1.Pod, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(path))
			if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	var nodePools []*v1.NodePool
	var pods []*corev1.Pod
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for doc := 1; ; doc++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
			}
			if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
				continue
			}
			if err := addObject(raw, &nodePools, &pods); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
			}
		}
	}
	return nodePools, pods, nil
}

func addObject(raw json.RawMessage, nodePools *[]*v1.NodePool, pods *[]*corev1.Pod) error {
	var tm typeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return err
	}
	switch {
	case strings.HasSuffix(tm.Kind, "List"):
		for _, item := range tm.Items {
			if err := addObject(item, nodePools, pods); err != nil {
				return err
			}
		}
	case tm.Kind == "NodePool" && tm.APIVersion == "karpenter.sh/v1":
		np := &v1.NodePool{}
		if err := json.Unmarshal(raw, np); err != nil {
			return fmt.Errorf("NodePool: %w", err)
		}
		if np.Spec.Template.Spec.NodeClassRef == nil {
			return fmt.Errorf("NodePool/%s: spec.template.spec.nodeClassRef is required", np.Name)
		}
		if np.UID == "" {
			np.UID = types.UID("nodepool-" + np.Name)
		}
		*nodePools = append(*nodePools, np)
	case tm.Kind == "Pod" && tm.APIVersion == "v1":
		pod := &corev1.Pod{}
		if err := json.Unmarshal(raw, pod); err != nil {
			return fmt.Errorf("Pod: %w", err)
		}
		if pod.Spec.NodeName != "" {
			return fmt.Errorf("Pod/%s: bound pods (spec.nodeName) are not supported by fixture-bench", pod.Name)
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		if pod.UID == "" {
			// The scheduler caches per-pod data by UID.
			pod.UID = types.UID(pod.Namespace + "/" + pod.Name)
		}
		if pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		*pods = append(*pods, pod)
	case skippedKinds[tm.Kind]:
	default:
		return fmt.Errorf("unsupported kind %s %q (fixture-bench reads karpenter.sh/v1 NodePools and v1 Pods)", tm.APIVersion, tm.Kind)
	}
	return nil
}

// ---- catalog ------------------------------------------------------------------------------------

type csvTable struct {
	file   string
	header map[string]int
	rows   [][]string
}

func readCSV(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s: empty file", path)
	}
	t := &csvTable{file: path, header: map[string]int{}, rows: records[1:]}
	for i, name := range records[0] {
		t.header[strings.TrimSpace(name)] = i
	}
	return t, nil
}

func (t *csvTable) get(row []string, line int, column string) (string, error) {
	i, ok := t.header[column]
	if !ok {
		return "", fmt.Errorf("%s: missing column %q", t.file, column)
	}
	if i >= len(row) {
		return "", fmt.Errorf("%s:%d: too few columns", t.file, line)
	}
	return strings.TrimSpace(row[i]), nil
}

func (t *csvTable) getInt(row []string, line int, column string) (int64, bool, error) {
	s, err := t.get(row, line, column)
	if err != nil || s == "" {
		return 0, false, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s:%d: column %s: %w", t.file, line, column, err)
	}
	return v, true, nil
}

func readPrices(path string, withZone bool) (map[string]map[string]float64, error) {
	t, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	// key: region (on-demand) or region/zone (spot) -> type -> price
	out := map[string]map[string]float64{}
	for i, row := range t.rows {
		line := i + 2
		region, err := t.get(row, line, "region")
		if err != nil {
			return nil, err
		}
		key := region
		if withZone {
			zone, err := t.get(row, line, "zone")
			if err != nil {
				return nil, err
			}
			key = region + "/" + zone
		}
		name, err := t.get(row, line, "instance_type")
		if err != nil {
			return nil, err
		}
		ps, err := t.get(row, line, "usd_per_hour")
		if err != nil {
			return nil, err
		}
		p, err := strconv.ParseFloat(ps, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: usd_per_hour: %w", t.file, line, err)
		}
		if out[key] == nil {
			out[key] = map[string]float64{}
		}
		out[key][name] = p
	}
	return out, nil
}

func kubeReservedCPUMilli(vcpu int64) int64 {
	micro := int64(0)
	if vcpu >= 1 {
		micro += 60000
	}
	if vcpu >= 2 {
		micro += 10000
	}
	if vcpu >= 3 {
		micro += 5000 * (min(vcpu, 4) - 2)
	}
	if vcpu > 4 {
		micro += 2500 * (vcpu - 4)
	}
	return micro / 1000
}

func memoryCapacityMiB(mib int64, arch string) int64 {
	if arch == "arm64" {
		mib -= 64
	}
	if mib <= 0 {
		return 0
	}
	return mib - (75*mib+999)/1000
}

func fnvSpotFactor(name, zone string) float64 {
	h := uint64(14695981039346656037)
	for _, c := range []byte(name + "|" + zone) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return 0.3 + 0.4*float64(h%10001)/10000.0
}

// loadCatalog reads a catalog directory in Dovetail's CSV format and builds upstream
// InstanceTypes with the formulas of dovetail/cloudprovider/aws_catalog.h.
func loadCatalog(dir, region string, zones []string) ([]*cloudprovider.InstanceType, error) {
	table, err := readCSV(filepath.Join(dir, "instance-types.csv"))
	if err != nil {
		return nil, err
	}
	onDemandAll, err := readPrices(filepath.Join(dir, "on-demand-prices.csv"), false)
	if err != nil {
		return nil, err
	}
	onDemand := onDemandAll[region]
	if len(onDemand) == 0 {
		onDemand = onDemandAll["us-east-1"]
	}
	var spot map[string]map[string]float64
	spotPath := filepath.Join(dir, "spot-prices.csv")
	if _, err := os.Stat(spotPath); err == nil {
		if spot, err = readPrices(spotPath, true); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "offerings.csv")); err == nil {
		return nil, errors.New("offerings.csv is not supported by fixture-bench; leave it out of the fixture catalog")
	}

	var out []*cloudprovider.InstanceType
	for i, row := range table.rows {
		line := i + 2
		str := func(c string) string { s, e := table.get(row, line, c); err = errors.Join(err, e); return s }
		num := func(c string) (int64, bool) {
			v, ok, e := table.getInt(row, line, c)
			err = errors.Join(err, e)
			return v, ok
		}
		name, arch, osName := str("name"), str("arch"), str("os")
		vcpu, _ := num("vcpu")
		memMiB, _ := num("memory_mib")
		maxPods, _ := num("max_pods")
		if err != nil {
			return nil, err
		}
		if vcpu <= 0 || memMiB <= 0 {
			return nil, fmt.Errorf("%s:%d: %s has no vCPUs or no memory", table.file, line, name)
		}

		reqs := kscheduling.NewRequirements(
			kscheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
			kscheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch),
			kscheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, osName),
			kscheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpDoesNotExist),
			kscheduling.NewRequirement(corev1.LabelTopologyRegion, corev1.NodeSelectorOpIn, region),
			kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...),
			kscheduling.NewRequirement(labelZoneID, corev1.NodeSelectorOpDoesNotExist),
			kscheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot),
			kscheduling.NewRequirement(labelTenancy, corev1.NodeSelectorOpIn, "default", "dedicated"),
		)
		inOrAbsent := func(key, value string) {
			if value == "" || value == "0" {
				reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
			} else {
				reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpIn, value))
			}
		}
		boolLabel := func(key, column string) {
			v := strings.ToLower(str(column))
			reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpIn, strconv.FormatBool(v == "true" || v == "yes")))
		}
		inOrAbsent(labelCategory, str("category"))
		inOrAbsent(labelFamily, str("family"))
		inOrAbsent(labelGeneration, str("generation"))
		inOrAbsent(labelSize, str("size"))
		inOrAbsent(labelCPU, str("vcpu"))
		inOrAbsent(labelCPUManuf, str("cpu_manufacturer"))
		inOrAbsent(labelCPUClock, str("cpu_sustained_clock_speed_mhz"))
		inOrAbsent(labelMemory, str("memory_mib"))
		inOrAbsent(labelHypervisor, str("hypervisor"))
		boolLabel(labelEncryption, "encryption_in_transit_supported")
		boolLabel(labelFlex, "capability_flex")
		inOrAbsent(labelLocalNvme, str("local_nvme_gib"))
		// Bandwidths: blank means unknown (no label); zero is a value.
		for key, column := range map[string]string{labelNetworkBW: "network_bandwidth_mbps", labelEbsBW: "ebs_bandwidth_mbps"} {
			if v := str(column); v == "" {
				reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
			} else {
				reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v))
			}
		}
		inOrAbsent(labelGPUName, str("gpu_name"))
		inOrAbsent(labelGPUManuf, str("gpu_manufacturer"))
		inOrAbsent(labelGPUCount, str("gpu_count"))
		inOrAbsent(labelGPUMemory, str("gpu_memory_mib"))
		inOrAbsent(labelAccName, str("accelerator_name"))
		inOrAbsent(labelAccManuf, str("accelerator_manufacturer"))
		inOrAbsent(labelAccCount, str("accelerator_count"))
		for _, key := range []string{labelNitroSbx, labelCRID, labelCRType, labelCRInterr, labelPGID, labelPGPart} {
			reqs.Add(kscheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}

		storage := ephemeralStorageGiB * giB
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(vcpu, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(memoryCapacityMiB(memMiB, arch)*miB, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(storage, resource.BinarySI),
		}
		for res, column := range map[corev1.ResourceName]string{
			"vpc.amazonaws.com/pod-eni": "pod_eni", "vpc.amazonaws.com/efa": "efa",
			"nvidia.com/gpu": "nvidia_gpu", "amd.com/gpu": "amd_gpu",
			"aws.amazon.com/neuron": "neuron", "aws.amazon.com/neuroncore": "neuroncore",
		} {
			if v, _ := num(column); v > 0 {
				capacity[res] = *resource.NewQuantity(v, resource.DecimalSI)
			}
		}
		if err != nil {
			return nil, err
		}
		overhead := &cloudprovider.InstanceTypeOverhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedCPUMilli(vcpu), resource.DecimalSI),
				corev1.ResourceMemory:           *resource.NewQuantity((11*maxPods+255)*miB, resource.BinarySI),
				corev1.ResourceEphemeralStorage: *resource.NewQuantity(giB, resource.BinarySI),
			},
			SystemReserved: corev1.ResourceList{},
			EvictionThreshold: corev1.ResourceList{
				corev1.ResourceMemory:           *resource.NewQuantity(100*miB, resource.BinarySI),
				corev1.ResourceEphemeralStorage: *resource.NewQuantity((storage+9)/10, resource.BinarySI),
			},
		}

		od, hasOD := onDemand[name]
		var offerings cloudprovider.Offerings
		for _, zone := range zones {
			offerings = append(offerings, &cloudprovider.Offering{
				Requirements: kscheduling.NewLabelRequirements(map[string]string{
					v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelTopologyZone: zone,
				}),
				Price:     od,
				Available: hasOD,
			})
			spotPrice, hasSpot := 0.0, false
			if spot != nil {
				spotPrice, hasSpot = spot[region+"/"+zone][name]
			} else if hasOD {
				spotPrice, hasSpot = math.Round(od*fnvSpotFactor(name, zone)*1e6)/1e6, true
			}
			offerings = append(offerings, &cloudprovider.Offering{
				Requirements: kscheduling.NewLabelRequirements(map[string]string{
					v1.CapacityTypeLabelKey: v1.CapacityTypeSpot, corev1.LabelTopologyZone: zone,
				}),
				Price:     spotPrice,
				Available: hasSpot,
			})
		}
		out = append(out, &cloudprovider.InstanceType{
			Name:         name,
			Requirements: reqs,
			Offerings:    offerings,
			Capacity:     capacity,
			Overhead:     overhead,
		})
	}
	return out, nil
}
