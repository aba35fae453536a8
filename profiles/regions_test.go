package profiles

import "testing"

func TestGeography(t *testing.T) {
	for _, c := range []struct{ region, want string }{
		{"eu-west-1", "eu"},
		{"eu-central-2", "eu"},
		{"us-east-1", "us"},
		{"us-gov-west-1", "us"},
		{"ap-northeast-1", "apac"},
		{"ca-central-1", "ca"},
		{"sa-east-1", "latam"},
		{"mx-central-1", "latam"},
		{"il-central-1", "me"},
		{"me-central-1", "me"},
		{"af-south-1", "af"},
		{"europe-west4", "eu"},
		{"us-central1", "us"},
		{"us-east5", "us"},
		{"northamerica-northeast1", "ca"},
		{"northamerica-south1", "latam"},
		{"southamerica-east1", "latam"},
		{"asia-northeast1", "apac"},
		{"australia-southeast1", "apac"},
		{"me-west1", "me"},
		{"africa-south1", "af"},
		{"swedencentral", "eu"},
		{"SwedenCentral", "eu"},
		{"uksouth", "eu"},
		{"eastus2", "us"},
		{"japaneast", "apac"},
		{"uaenorth", "me"},
		{"eu", "eu"},
		{"us", "us"},
		{"global", GeographyAny},
		{"", ""},
		{"mars-north-1", ""},
		{"europe", ""},
	} {
		if got := Geography(c.region); got != c.want {
			t.Errorf("Geography(%q) = %q, want %q", c.region, got, c.want)
		}
	}
}

func TestInferenceProfileGeography(t *testing.T) {
	for _, c := range []struct {
		id   string
		want string
		ok   bool
	}{
		{"eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu", true},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us", true},
		{"us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0", "us", true},
		{"apac.anthropic.claude-sonnet-4-20250514-v1:0", "apac", true},
		{"jp.anthropic.claude-sonnet-4-5-20250929-v1:0", "apac", true},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", GeographyAny, true},
		{"anthropic.claude-3-haiku-20240307-v1:0", "", false},
		{"amazon.nova-pro-v1:0", "", false},
		{"claude-sonnet-4-5", "", false},
	} {
		got, ok := InferenceProfileGeography(c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("InferenceProfileGeography(%q) = %q, %v; want %q, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}
