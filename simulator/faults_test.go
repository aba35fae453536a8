package simulator

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFaultCorpus(t *testing.T) {
	cases := loadFaultCorpus(t)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.input, func(t *testing.T) {
			f, err := ParseFault(c.input)
			if !c.ok {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrFaultSyntax))
				assert.Contains(t, err.Error(), c.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, f.String())
			again, err := ParseFault(f.String())
			require.NoError(t, err)
			assert.Equal(t, f, again)
			assert.NoError(t, f.Validate())
		})
	}
}

func TestParseFaultFields(t *testing.T) {
	f, err := ParseFault("status=503;provider=deepinfra/fp8;model=openai/gpt-4o;delay=250ms;times=2")
	require.NoError(t, err)
	assert.Equal(t, Fault{Action: FaultStatus, Status: 503, Provider: "deepinfra/fp8", Model: "openai/gpt-4o",
		Delay: 250 * time.Millisecond, Times: 2}, f)

	fs, err := ParseFaults("status=429;provider=a, hang;provider=b")
	require.NoError(t, err)
	require.Len(t, fs, 2)
	assert.Equal(t, FaultHang, fs[1].Action)
	assert.Equal(t, "b", fs[1].Provider)

	_, err = ParseFaults("status=429,bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fault 2")
}

func TestFaultMatching(t *testing.T) {
	f := Fault{Action: FaultStatus, Status: 500, Provider: "DeepInfra", Model: "llama-3.1-70b-instruct"}
	assert.True(t, f.matches("meta-llama/llama-3.1-70b-instruct", "deepinfra/fp8"))
	assert.True(t, f.matches("META-LLAMA/llama-3.1-70b-instruct", "deepinfra"))
	assert.False(t, f.matches("meta-llama/llama-3.1-70b-instruct", "together"))
	assert.False(t, f.matches("meta-llama/llama-3.1-8b-instruct", "deepinfra/fp8"))
	exact := Fault{Action: FaultHang, Provider: "deepinfra/turbo"}
	assert.True(t, exact.matches("x/y", "deepinfra/turbo"))
	assert.False(t, exact.matches("x/y", "deepinfra/fp8"))
}

func TestValidateRejectsUnknownAction(t *testing.T) {
	assert.Error(t, Fault{Action: "explode"}.Validate())
	assert.Error(t, Fault{Action: FaultStatus}.Validate(), "status fault without a status")
	assert.NoError(t, Fault{Action: FaultStatus, Status: 418}.Validate())
}

func FuzzParseFault(f *testing.F) {
	for _, c := range loadFaultCorpus(f) {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fault, err := ParseFault(s)
		if err != nil {
			if !errors.Is(err, ErrFaultSyntax) {
				t.Fatalf("error does not wrap ErrFaultSyntax: %v", err)
			}
			return
		}
		again, err := ParseFault(fault.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", fault.String(), s, err)
		}
		if again != fault {
			t.Fatalf("round trip changed %q: %+v != %+v", s, again, fault)
		}
	})
}
