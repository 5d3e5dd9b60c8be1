// Command hash computes, with upstream Karpenter's own public Hash() functions (the pinned Go
// modules sigs.k8s.io/karpenter and github.com/aws/karpenter-provider-aws), the drift hashes of
// every NodePool and EC2NodeClass in cases.json, and writes them with their inputs as the test
// vectors Dovetail's tests read (test/testdata/upstream-hashes.json).
//
//	go run . -cases cases.json -out ../../../test/testdata/upstream-hashes.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)


type cases struct {
	NodePools      []json.RawMessage `json:"nodePools"`
	EC2NodeClasses []json.RawMessage `json:"ec2NodeClasses"`
}

type vector struct {
	Kind        string          `json:"kind"`
	Name        string          `json:"name"`
	Hash        string          `json:"hash"`
	HashVersion string          `json:"hashVersion"`
	CABundle    *string         `json:"caBundle,omitempty"`
	Object      json.RawMessage `json:"object"`
}

func main() {
	in := flag.String("cases", "cases.json", "the corpus (make_cases.py)")
	out := flag.String("out", "", "where to write the vectors (default: stdout)")
	flag.Parse()
	raw, err := os.ReadFile(*in)
	if err != nil {
		fail(err)
	}
	var c cases
	if err := json.Unmarshal(raw, &c); err != nil {
		fail(err)
	}
	var vectors []vector
	for _, obj := range c.NodePools {
		var np karpv1.NodePool
		if err := json.Unmarshal(obj, &np); err != nil {
			fail(fmt.Errorf("NodePool %s: %w", obj, err))
		}
		vectors = append(vectors, vector{Kind: "NodePool", Name: np.Name, Hash: np.Hash(),
			HashVersion: karpv1.NodePoolHashVersion, Object: obj})
	}
	for _, obj := range c.EC2NodeClasses {
		var nc awsv1.EC2NodeClass
		if err := json.Unmarshal(obj, &nc); err != nil {
			fail(fmt.Errorf("EC2NodeClass %s: %w", obj, err))
		}
		var extra struct {
			CABundle *string `json:"caBundle"`
		}
		if err := json.Unmarshal(obj, &extra); err != nil {
			fail(err)
		}
		vectors = append(vectors, vector{Kind: "EC2NodeClass", Name: nc.Name, Hash: nc.Hash(extra.CABundle),
			HashVersion: awsv1.EC2NodeClassHashVersion, CABundle: extra.CABundle, Object: obj})
	}
	doc, err := json.MarshalIndent(map[string]any{
		"comment": "Drift hashes computed by upstream Karpenter v1.14.1's Hash() (bench/upstream/hash); " +
			"regenerate with `go run . -cases cases.json -out ...` there.",
		"vectors": vectors,
	}, "", " ")
	if err != nil {
		fail(err)
	}
	doc = append(doc, '\n')
	if *out == "" {
		os.Stdout.Write(doc)
		return
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hash:", err)
	os.Exit(1)
}
