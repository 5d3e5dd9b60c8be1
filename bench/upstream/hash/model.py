#!/usr/bin/env python3
"""A readable, executable model of upstream's drift hashes, checked against every vector of
test/testdata/upstream-hashes.json (what bench/upstream/hash's Go program wrote with upstream's own
Hash()): the readable form of dovetail/apis/hash/drift_hash.cc. Not used by CI.

The walk (hashstructure v2, FormatV2, with upstream's SlicesAsSets, IgnoreZeroValue, ZeroNil):
- FNV-1 64 (not 1a) of bytes: a string's bytes; int64/int32 little-endian; a bool as one int8.
- ordered(a, b) = FNV of the 16 LE bytes of a then b; finish(a) = FNV of the 8 LE bytes of a.
- A struct starts from the hash of its Go type name; for every exported field, in declaration
  order, that is not tagged ignore and is not zero: h ^= ordered(hash(GoFieldName), hash(value));
  h = finish(h). A `hash:"string"` field (volumeSize) hashes its String().
- A map XORs ordered(hash(k), hash(v)) over its entries, then finish. A slice XORs its
  elements (no finish). Pointers are followed.
- Zero means Go's IsZero: a nil map or slice, "", 0, false, a nil pointer. An empty but present
  map or list (`labels: {}`, `taints: []`) is NOT zero and is hashed (finish(0), 0), and so is a
  pointer to a zero value (`kubelet: {}`, `detailedMonitoring: false`).
- NodePool: the hash of spec.template (NodeClaimTemplate{ObjectMeta, Spec}); `expireAfter: Never`
  equals absent. EC2NodeClass: the slice [spec, the resolved AMI family, the CA bundle or ""]
  hashed as a set (XOR of the three).
Objects are hashed as given, without the CRD's defaults.

    python3 model.py    # prints the matches per kind; exits 1 on a mismatch
"""
import json
import re
import struct
import sys
from pathlib import Path

VECTORS = Path(__file__).resolve().parents[3] / "test" / "testdata" / "upstream-hashes.json"
def fnv1(b):
    h=0xcbf29ce484222325
    for x in b:
        h=(h*0x100000001b3)&0xFFFFFFFFFFFFFFFF; h^=x
    return h
def s(x): return fnv1(x.encode())
def i64(x): return fnv1(struct.pack('<q',x))
def i32(x): return fnv1(struct.pack('<i',x))
def ordered(a,b): return fnv1(struct.pack('<QQ',a,b))
def finish(a): return fnv1(struct.pack('<Q',a))
def struct_(name, fields):  # fields: (Go field name, hash of the value, or None when zero)
    h=s(name)
    for n,v in fields:
        if v is None: continue
        h ^= ordered(s(n), v); h=finish(h)
    return h
def strmap(m):
    if m is None: return None
    h=0
    for k,v in m.items(): h^=ordered(s(k),s(v))
    return finish(h)
def setslice(items):
    if items is None: return None
    h=0
    for x in items: h^=x
    return h
def dur(text):  # Go durations as the corpus spells them: [Nh][Nm][Ns], in nanoseconds
    m=re.fullmatch(r'((\d+)h)?((\d+)m)?((\d+)s)?',text)
    return ((int(m.group(2) or 0)*3600+int(m.group(4) or 0)*60+int(m.group(6) or 0))*10**9)
def taint(t):
    return struct_("Taint",[("Key",s(t["key"]) if t.get("key") else None),("Value",s(t["value"]) if t.get("value") else None),("Effect",s(t["effect"]) if t.get("effect") else None)])
def nodepool(np):
    t=np["spec"]["template"]; md=t.get("metadata",{}); sp=t["spec"]
    meta=struct_("ObjectMeta",[("Labels",strmap(md.get("labels"))),("Annotations",strmap(md.get("annotations")))])
    metazero = md.get("labels") is None and md.get("annotations") is None
    ref=sp.get("nodeClassRef")
    refh=None if not ref else struct_("NodeClassReference",[(k.capitalize(), s(ref[k]) if ref.get(k) else None) for k in ("kind","name","group")])
    tgp=sp.get("terminationGracePeriod")
    tgph=None if tgp is None else struct_("Duration",[("Duration", i64(dur(tgp)) if dur(tgp) else None)])
    ea=sp.get("expireAfter")
    eah=None if ea in (None,"Never") else struct_("NillableDuration",[("Duration", i64(dur(ea)))])
    spec=struct_("NodeClaimTemplateSpec",[("Taints",setslice(None if sp.get("taints") is None else [taint(x) for x in sp["taints"]])),("StartupTaints",setslice(None if sp.get("startupTaints") is None else [taint(x) for x in sp["startupTaints"]])),("NodeClassRef",refh),("TerminationGracePeriod",tgph),("ExpireAfter",eah)])
    return struct_("NodeClaimTemplate",[("ObjectMeta",None if metazero else meta),("Spec",spec)])
vs=json.load(open(VECTORS))['vectors']
ok=bad=0
for v in vs:
    if v['kind']!='NodePool': continue
    got=str(nodepool(v['object']))
    if got==v['hash']: ok+=1
    else:
        bad+=1
        if bad<6: print('BAD',v['name'])
print('NodePool', ok, 'match,', bad, 'differ')
failed = bad

def b8(x): return fnv1(struct.pack('<b', 1 if x else 0))
def gostruct(name, spec, fields):
    # fields: (JSON name, Go name, hash function, is a pointer); a pointer field is hashed
    # whenever present, a value field only when not zero
    out=[]
    for j,g,fn,ptr in fields:
        v=spec.get(j) if spec else None
        if v is None: out.append((g,None)); continue
        if not ptr and v in (0, "", False): out.append((g,None)); continue
        out.append((g,fn(v)))
    return struct_(name,out)
def strslice(v): return setslice([s(x) for x in v])
def durmap(m):
    h=0
    for k,v in m.items(): h^=ordered(s(k), struct_("Duration",[("Duration", i64(dur(v)) if dur(v) else None)]))
    return finish(h)
def kubelet(k):
    return gostruct("KubeletConfiguration",k,[("clusterDNS","ClusterDNS",strslice,False),("maxPods","MaxPods",i32,True),("podsPerCore","PodsPerCore",i32,True),
      ("systemReserved","SystemReserved",strmap,False),("kubeReserved","KubeReserved",strmap,False),("evictionHard","EvictionHard",strmap,False),
      ("evictionSoft","EvictionSoft",strmap,False),("evictionSoftGracePeriod","EvictionSoftGracePeriod",durmap,False),("evictionMaxPodGracePeriod","EvictionMaxPodGracePeriod",i32,True),
      ("imageGCHighThresholdPercent","ImageGCHighThresholdPercent",i32,True),("imageGCLowThresholdPercent","ImageGCLowThresholdPercent",i32,True),("cpuCFSQuota","CPUCFSQuota",b8,True)])
def ebs(e):
    return gostruct("BlockDevice",e,[("deleteOnTermination","DeleteOnTermination",b8,True),("encrypted","Encrypted",b8,True),("iops","IOPS",i64,True),("kmsKeyID","KMSKeyID",s,True),
      ("snapshotID","SnapshotID",s,True),("throughput","Throughput",i64,True),("volumeInitializationRate","VolumeInitializationRate",i32,True),("volumeSize","VolumeSize",s,True),("volumeType","VolumeType",s,True)])
def bdm(d):
    return gostruct("BlockDeviceMapping",d,[("deviceName","DeviceName",s,True),("ebs","EBS",ebs,True),("rootVolume","RootVolume",b8,False)])
def ni(n):
    return gostruct("NetworkInterface",n,[("networkCardIndex","NetworkCardIndex",i32,False),("deviceIndex","DeviceIndex",i32,False),("interfaceType","InterfaceType",s,False)])
FAM={"al2":"AL2","al2023":"AL2023","bottlerocket":"Bottlerocket","windows2019":"Windows2019","windows2022":"Windows2022"}
def nodeclass(o, ca):
    sp=o["spec"]
    spech=gostruct("EC2NodeClassSpec",sp,[("placementGroupSelector","PlacementGroupSelector",lambda p: gostruct("PlacementGroupSelector",p,[("name","Name",s,True),("id","ID",s,True)]),True),
      ("associatePublicIPAddress","AssociatePublicIPAddress",b8,True),("userData","UserData",s,True),("role","Role",s,False),("instanceProfile","InstanceProfile",s,True),
      ("tags","Tags",strmap,False),("kubelet","Kubelet",kubelet,True),("blockDeviceMappings","BlockDeviceMappings",lambda l: setslice([bdm(x) for x in l]),False),
      ("instanceStorePolicy","InstanceStorePolicy",s,True),("networkInterfaces","NetworkInterfaces",lambda l: setslice([ni(x) for x in l]),False),
      ("detailedMonitoring","DetailedMonitoring",b8,True),("metadataOptions","MetadataOptions",lambda m: gostruct("MetadataOptions",m,[("httpEndpoint","HTTPEndpoint",s,True),("httpProtocolIPv6","HTTPProtocolIPv6",s,True),("httpPutResponseHopLimit","HTTPPutResponseHopLimit",i64,True),("httpTokens","HTTPTokens",s,True)]),True),
      ("connectionTracking","ConnectionTracking",lambda c: gostruct("ConnectionTracking",c,[("tcpEstablishedTimeout","TCPEstablishedTimeout",i32,True),("udpStreamTimeout","UDPStreamTimeout",i32,True),("udpTimeout","UDPTimeout",i32,True)]),True),
      ("context","Context",s,True),("cpuOptions","CPUOptions",lambda c: gostruct("CPUOptions",c,[("nestedVirtualization","NestedVirtualization",s,True)]),True)])
    fam = sp.get("amiFamily")
    if fam is None:
        alias=next((t["alias"] for t in sp.get("amiSelectorTerms",[]) if t.get("alias")),None)
        fam = FAM[alias.split("@")[0].lower()] if alias else "Custom"
    return spech ^ s(fam) ^ s(ca or "")
ok=bad=0
for v in vs:
    if v['kind']!='EC2NodeClass': continue
    got=str(nodeclass(v['object'], v.get('caBundle')))
    if got==v['hash']: ok+=1
    else:
        bad+=1
        if bad<8: print('BAD',v['name'])
print('EC2NodeClass', ok, 'match,', bad, 'differ')
failed += bad
sys.exit(1 if failed else 0)
