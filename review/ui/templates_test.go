package ui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPageTemplatesParse parses every page's templates, which New no longer
// does (they are parsed when the first page is rendered): a broken template
// fails here, not in front of the first reviewer.
func TestPageTemplatesParse(t *testing.T) {
	pages := pageTemplates()
	for _, name := range pageNames {
		require.NotNil(t, pages[name], name)
		require.NotNil(t, pages[name].Lookup("layout.html"), name)
		require.NotNil(t, pages[name].Lookup(name+".html"), name)
	}
}
