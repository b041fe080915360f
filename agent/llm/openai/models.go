package openai

import (
	"context"
	"fmt"
	"slices"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// Models lists the model ids the server offers (GET /models), sorted. It
// is not retried: it is asked when a person is waiting (mnemo init, a
// model the server does not know).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	list, err := c.client.ListModels(ctx)
	if err != nil {
		if c.classify(err).kind == llm.ErrAuth { // a wrong key: the caller asks for another
			return nil, fmt.Errorf("list the models at %s: %w (%s)", c.shownURL, llm.ErrAuth, redacted{err, c.apiKey}.Error())
		}
		return nil, fmt.Errorf("list the models at %s: %s", c.shownURL, redacted{err, c.apiKey}.Error())
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
