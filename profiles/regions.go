package profiles

import "strings"

// Geographies are the values a data policy's regions may list: where a
// request may be processed, at the grain the clouds themselves group their
// regions (and their cross-region inference) by.
//
//   - "us": the United States (incl. its government clouds)
//   - "ca": Canada
//   - "latam": Mexico, Central and South America
//   - "eu": Europe as the clouds group it: the EU and EEA, the United
//     Kingdom and Switzerland
//   - "me": the Middle East and Israel
//   - "af": Africa
//   - "apac": Asia and the Pacific (Japan, Korea, India, South-East Asia,
//     Australia, New Zealand)
var Geographies = []string{"us", "ca", "latam", "eu", "me", "af", "apac"}

// GeographyAny is the geography of a region spelling that may process
// anywhere (a cloud's "global" location or inference profile): it satisfies
// no regions restriction.
const GeographyAny = "global"

// IsGeography reports whether g is one of [Geographies].
func IsGeography(g string) bool {
	for _, x := range Geographies {
		if x == g {
			return true
		}
	}
	return false
}

// Geography maps a region, in its cloud's own spelling, to the geography it
// processes in: "eu-west-1" (AWS), "europe-west4" (Google Cloud) and
// "swedencentral" (Azure) are all "eu". A geography itself ("eu", an
// upstream that declares only where it processes, as a provider's regional
// endpoint does) maps to itself, and "global" to [GeographyAny]. It returns
// "" for a spelling the table does not know: such an upstream satisfies no
// regions restriction.
//
// Sources of the table, per cloud:
//   - AWS: the region codes of "AWS Regions"
//     (https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html);
//     every code starts with its area (us-, us-gov-, ca-, mx-, sa-, eu-,
//     il-, me-, af-, ap-).
//   - Google Cloud: the locations of Vertex AI
//     (https://cloud.google.com/vertex-ai/docs/general/locations); every
//     location starts with its area (us-, northamerica-, southamerica-,
//     europe-, me-, africa-, asia-, australia-), plus the multi-regions
//     "us" and "eu" and the location "global".
//   - Azure: the region names of "Azure regions list"
//     (https://learn.microsoft.com/en-us/azure/reliability/regions-list),
//     which carry no area prefix and are listed one by one in azureRegions.
func Geography(region string) string {
	r := strings.ToLower(strings.TrimSpace(region))
	if r == "" {
		return ""
	}
	if r == GeographyAny || IsGeography(r) {
		return r
	}
	if g, ok := azureRegions[r]; ok {
		return g
	}
	for _, p := range regionPrefixes {
		if strings.HasPrefix(r, p.prefix) {
			return p.geo
		}
	}
	return ""
}

// regionPrefixes map the area prefix of AWS and Google Cloud region codes to
// a geography, the longer prefix of two that overlap first.
var regionPrefixes = []struct{ prefix, geo string }{
	// AWS
	{"us-gov-", "us"},
	{"us-", "us"}, // AWS us-east-1, Google Cloud us-central1
	{"ca-", "ca"},
	{"mx-", "latam"},
	{"sa-", "latam"},
	{"eu-", "eu"},
	{"il-", "me"},
	{"me-", "me"}, // AWS me-central-1, Google Cloud me-west1
	{"af-", "af"},
	{"ap-", "apac"},
	// Google Cloud
	{"northamerica-south", "latam"}, // Mexico
	{"northamerica-", "ca"},         // Montréal, Toronto
	{"southamerica-", "latam"},
	{"europe-", "eu"},
	{"africa-", "af"},
	{"asia-", "apac"},
	{"australia-", "apac"},
}

// azureRegions are Azure's region names and their geographies.
var azureRegions = map[string]string{
	"eastus": "us", "eastus2": "us", "centralus": "us", "northcentralus": "us", "southcentralus": "us",
	"westcentralus": "us", "westus": "us", "westus2": "us", "westus3": "us",
	"usgovvirginia": "us", "usgovarizona": "us", "usgovtexas": "us",
	"canadacentral": "ca", "canadaeast": "ca",
	"brazilsouth": "latam", "brazilsoutheast": "latam", "mexicocentral": "latam", "chilecentral": "latam",
	"northeurope": "eu", "westeurope": "eu", "francecentral": "eu", "francesouth": "eu",
	"germanywestcentral": "eu", "germanynorth": "eu", "swedencentral": "eu", "swedensouth": "eu",
	"norwayeast": "eu", "norwaywest": "eu", "switzerlandnorth": "eu", "switzerlandwest": "eu",
	"uksouth": "eu", "ukwest": "eu", "polandcentral": "eu", "italynorth": "eu", "spaincentral": "eu",
	"austriaeast": "eu", "belgiumcentral": "eu", "denmarkeast": "eu",
	"uaenorth": "me", "uaecentral": "me", "qatarcentral": "me", "israelcentral": "me", "saudiarabiaeast": "me",
	"southafricanorth": "af", "southafricawest": "af",
	"eastasia": "apac", "southeastasia": "apac", "japaneast": "apac", "japanwest": "apac",
	"koreacentral": "apac", "koreasouth": "apac", "centralindia": "apac", "southindia": "apac",
	"westindia": "apac", "jioindiawest": "apac", "jioindiacentral": "apac", "australiaeast": "apac",
	"australiasoutheast": "apac", "australiacentral": "apac", "australiacentral2": "apac",
	"newzealandnorth": "apac", "indonesiacentral": "apac", "malaysiawest": "apac",
}

// InferenceProfileGeography returns the geography of an Amazon Bedrock
// model id that names a cross-region inference profile ("eu.anthropic.
// claude-…", "global.anthropic.claude-…"): Bedrock processes such a request
// in any region of the profile's geography, whatever the region it was sent
// to. ok is false for a model id without such a prefix. Sources: "Supported
// Regions and models for inference profiles"
// (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html)
// and the geographies of the AWS CDK's CrossRegionInferenceProfileRegion
// (us, us-gov, eu, apac, jp, au, global).
func InferenceProfileGeography(modelID string) (geo string, ok bool) {
	prefix, rest, found := strings.Cut(modelID, ".")
	if !found || rest == "" {
		return "", false
	}
	switch strings.ToLower(prefix) {
	case "us", "us-gov":
		return "us", true
	case "eu":
		return "eu", true
	case "apac", "jp", "au":
		return "apac", true
	case "global":
		return GeographyAny, true
	}
	return "", false
}
