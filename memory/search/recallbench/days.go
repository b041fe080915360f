package recallbench

// filler is an ordinary day's entry: %s in the title takes one of subs.
type filler struct {
	title     string
	subs      []string
	summaries []string
}

var fillers = []filler{
	{"Team sync", nil, []string{"Roadmap for next quarter; Beacon SLOs", "Hiring update and the offsite date", "Cost review: Harbor runners are the top line", "Demo of the new admin UI", "Security training deadline reminder", "Who covers the holidays"}},
	{"Code reviews", nil, []string{"Reviewed four PRs: Beacon templates, a Nimbus metrics fix, two dependency bumps", "Long thread with Mark about error wrapping", "Approved Joon's migration tool", "Reviewed Will's PR on webhook retries", "Pushed back on a 2,000-line PR; asked to split it"}},
	{"Dinner with Sam at %s", []string{"Café de Klos", "the Ethiopian place on the Javastraat", "Wilde Zwijnen", "De Kas", "the ramen bar", "Bar Botanique"}, []string{"Grilled fish and too much wine", "Talked about the holidays", "Sam's shifts next month", "Celebrated nothing in particular", "The tasting menu; too much food"}},
	{"Groceries and meal prep", nil, []string{"Lentil soup and roasted vegetables for the week", "Curry for four days", "Saturday market; bought tulips"}},
	{"Cleaned the flat", nil, []string{"Deep clean before mom's visit", "Sorted the wardrobe; two bags to the charity shop", "Descaled the kettle, unblocked the shower drain"}},
	{"Cinema: %s", []string{"Past Lives", "Dune: Part Two", "Perfect Days", "Anora", "The Zone of Interest", "Conclave", "Aftersun"}, []string{"With Sam", "Alone on a Tuesday, an empty room", "Oskar recommended it"}},
	{"Cycled to %s", []string{"Muiden", "Haarlem", "Zaandam", "Zandvoort", "Durgerdam", "Marken"}, []string{"40 km with Oskar; headwind both ways", "Flat tyre on the way back", "Picnic by the water"}},
	{"Wrote docs for %s", []string{"Atlas", "Nimbus", "Beacon", "Harbor", "Scribe"}, []string{"A README for new joiners", "Updated the architecture diagram", "A runbook for the nightly jobs"}},
	{"Admin day", nil, []string{"Expenses, tax return prep, renewed the bike insurance", "Booked flights to Porto", "Sorted out the health insurance letter"}},
	{"Lunch with %s", []string{"Joon", "Will", "Mark", "Priya", "the design team"}, []string{"Talked about the Atlas timeline", "Dumplings; plans to travel to Seoul one day", "Gossip about the reorg", "Training for a marathon too"}},
	{"Gym", nil, []string{"Legs and core; knee ok", "Stretching class", "Rowing intervals"}},
	{"Planning for %s", []string{"Atlas", "Beacon", "Harbor", "Scribe"}, []string{"Scope cut to hit the date", "Estimates in t-shirt sizes", "Dependencies on the data team"}},
	{"Study: %s", []string{"Postgres internals", "Rust ownership", "distributed tracing", "Dutch grammar", "music theory"}, []string{"Two chapters", "An evening course session", "Watched a conference talk"}},
	{"Errands", nil, []string{"New barber on the Dapperstraat", "Picked up the dry cleaning", "Returned the parcel at the post office"}},
	{"Bike repair", nil, []string{"New chain and brake pads", "Fixed a puncture on the front wheel"}},
	{"Friends over for dinner", nil, []string{"Hana and her partner; made moqueca", "Oskar and Lieke; board games till 1 am"}},
	{"Mentoring session", nil, []string{"A junior from the data team on Go testing", "Career chat with an intern"}},
	{"Slow day", nil, []string{"Mostly meetings", "Emails and a design review", "Tired; early night"}},
	{"Walk in the Flevopark", nil, []string{"With Sam; herons everywhere", "Called Ana while walking"}},
	{"Video call with Ana", nil, []string{"The kids showed me their drawings", "Rui's new job", "Planning mom's birthday"}},
	{"Dutch class", nil, []string{"Separable verbs again", "Conversation practice about work", "Homework: a letter to the landlord"}},
	{"Benchmarks for %s", []string{"Nimbus", "Atlas", "Beacon"}, []string{"Allocation profile; nothing big", "p99 latency after the last change", "Compared two JSON encoders"}},
}

// noise are body lines of ordinary days, with words the questions use in
// another sense (a bill, the pool, a mark, "will").
var noise = []string{
	"- Will follow up next week", "- Will ask Joon about it", "- Mark the 15th in the calendar", "- Pay the gas bill",
	"- The gas bill went up again", "- Delivery of the new chair is late", "- The pool at the gym reopened", "- Slow train home, signal failure",
	"- Ran out of coffee at the office", "- Leo sent a voice message", "- Sam on nights this week", "- Rained all day",
	"- Fixed the squeaky door", "- Code freeze, nothing deployed", "- Priya out this week", "- Reviewed Will's PR on retries",
	"- Note: search the wiki first next time", "- The build cache was cold, slow CI", "- Mark said he will take the Friday release", "- Grace sent a postcard from Berlin",
	"- Bill called about the stag weekend", "- Need new running shoes", "- Forgot my badge again", "- Lunch: leftover soup",
	"- Water the tomatoes", "- Booked the car in for a service", "- Knee a bit stiff", "- Fed the sourdough starter",
	"- Support group reminder for Thursday", "- Piano practice skipped", "- Deploy went fine", "- Invoice for the flat paid",
	"- Dad's hands shaking more, mom says", "- Climbing shoes need resoling", "- Read on the train", "- Headache in the afternoon",
}

// factFile is a fact file: its name, title, summary and lines ("## "
// lines are section headings), each line with the questions it answers.
type factFile struct {
	name, title, summary string
	lines                []factLine
}

type factLine struct {
	text string
	asks []ask
}

func fl(text string, asks ...ask) factLine { return factLine{text, asks} }

var factFiles = []factFile{
	{"user", "User Facts", "name, home, work, languages", []factLine{
		fl("- Name: Lena Duarte"),
		fl("- Born: 17 February 1990 in Porto"),
		fl("- Lives in: Amsterdam Oost (Javaplein) with Sam, since June 2026", fct("where do I live?")),
		fl("- Languages: Portuguese, English, Dutch (B1, still taking classes)", fct("what languages do I speak?")),
		fl("- Job: staff engineer at Quill, payments platform (staff since November 2026)"),
		fl("- Pronouns: she/her"),
		fl("- Phone: Fairphone 5"),
		fl("- Bank: bunq"),
	}},
	{"family", "Family", "partner, parents, sister and her family", []factLine{
		fl("- Partner: Sam Okoro, nurse on the cardiology ward at OLVG", fct("what does Sam do for work?")),
		fl("- Mother: Rosa Duarte, born 1961-03-14, retired teacher, sings in a choir", fct("when is mom's birthday?")),
		fl("- Father: Tomás Duarte, Parkinson's since August 2025, on levodopa", fct("what medication is dad on?")),
		fl("- Sister: Ana Duarte Silva, lives in Porto, married to Rui", fct("what's my sister's name?")),
		fl("- Brother-in-law: Rui Silva, electrician"),
		fl("- Nephew: Leo, born 2019-07-02", fct("when is Leo's birthday?")),
		fl("- Niece: Mia, born 2021-03-30"),
		fl("- Ana's dog: Pepper, a beagle"),
		fl("- Grandmother: Lurdes, 95, care home in Braga", fct("how old is grandma?")),
		fl("- Sam's parents: Ngozi and Peter Okoro, in Rotterdam", fct("where do Sam's parents live?")),
	}},
	{"health", "Health", "doctors, conditions, allergies", []factLine{
		fl("## Doctors"),
		fl("- GP: Dr. Helen Varga, Oosterpark practice", fct("who is my GP?")),
		fl("- Dentist: Dr. Bakker, Tandartspraktijk Oost", fct("what's my dentist called?")),
		fl("- Physio: Dan Visser, Sportfysio Oost"),
		fl("- Therapist: Dr. Lindqvist, every other week since September 2025"),
		fl(""),
		fl("## Conditions"),
		fl("- Blood type: O negative", fct("what's my blood type?")),
		fl("- Allergies: penicillin (rash), cats, birch pollen", fct("am I allergic to anything?")),
		fl("- Knee: patellar tendinopathy, left, 2026"),
		fl("- Sleep: mild sleep apnoea (2026 study), no CPAP"),
		fl("- Glasses: -2.25 both eyes", fct("my glasses prescription")),
		fl("- Vaccinations: tetanus booster 2024, flu shot every October"),
	}},
	{"work", "Work", "employer, team, colleagues, on-call", []factLine{
		fl("- Employer: Quill, Amsterdam, payments and billing software"),
		fl("- Team: Payments Platform, 7 engineers"),
		fl("- Manager: Priya Raman", fct("who's my manager?")),
		fl("- Mark Jansen: staff engineer, owns Nimbus, my on-call partner"),
		fl("- Will Chen: backend engineer since February 2026, came from Adyen"),
		fl("- Joon Park: backend engineer since December 2025, Postgres expert", fct("who is Joon?")),
		fl("- Grace Osei: left in October 2025 for a startup in Berlin"),
		fl("- Office days: Tuesday and Thursday", fct("which days am I in the office?")),
		fl("- On-call: one week in six, handover on Mondays", fct("how often am I on call?")),
		fl("- Laptop: MacBook Pro M3, asset tag Q-1187"),
		fl("- Desk: 4th floor, by the window"),
	}},
	{"projects", "Projects", "Atlas, Nimbus, Harbor, Beacon, Scribe", []factLine{
		fl("- Atlas: billing on Postgres (migrated from MySQL, cutover 7 March 2026); phase 2 is usage-based billing", fct("what database does Atlas use?")),
		fl("- Atlas repo: github.com/quill/atlas"),
		fl("- Nimbus: edge cache in front of the API and invoice PDFs; owner Mark Jansen; monthly releases", fct("who owns Nimbus?")),
		fl("- Harbor: self-hosted CI runners on Kubernetes", fct("what is Harbor?")),
		fl("- Beacon: notifications (email via MJML, Slack via slack-go)"),
		fl("- Scribe: internal assistant on go-openai, answers from the runbooks", fct("which library does Scribe use?")),
		fl("- Rust importer: prototype only, not adopted"),
	}},
	{"tools", "Tools", "editor, Go, libraries", []factLine{
		fl("- Editor: Neovim with gopls", fct("which editor do I use?")),
		fl("- Go: 1.26 everywhere since June 2026", fct("what Go version are we on?")),
		fl("- go-openai: v1.43 in Scribe"),
		fl("- slack-go: v0.35 in Beacon", fct("which slack-go version does Beacon use?")),
		fl("- Database driver: pgx v5 with sqlc"),
		fl("- Load testing: k6"),
		fl("- Terminal: WezTerm with tmux"),
		fl("- Dotfiles: github.com/lenad/dotfiles"),
	}},
	{"hobbies", "Hobbies", "climbing, piano, running, books, bread", []factLine{
		fl("- Climbing: bouldering at Klimhal Amsterdam, around 6B", fct("what grade do I climb?")),
		fl("- Piano: Roland FP-30X; lessons with Mrs. Okafor, Tuesdays 19:00", fct("who teaches me piano?")),
		fl("- Running: half marathon PB 1:52:10 (Amsterdam, October 2026)", fct("what's my half marathon PB?")),
		fl("- Book club: the last Wednesday of the month, at Hana's or ours"),
		fl("- Sourdough: starter named Dough Jones, fed on Sundays", fct("what's my sourdough starter called?")),
		fl("- Cycling: day trips with Oskar"),
	}},
	{"friends", "Friends", "friends and what they are up to", []factLine{
		fl("- Bill Turner: friend from university in Edinburgh; married Fiona in July 2026"),
		fl("- Hana Sato: ex-colleague, book club; baby due December 2026", fct("when is Hana's baby due?")),
		fl("- Oskar Lind: neighbour from De Pijp, cycling and running buddy"),
		fl("- Marta: from the support group, her husband has Parkinson's"),
		fl("- Lieke: Oskar's partner, architect"),
	}},
	{"travel", "Travel", "passport, flights, places", []factLine{
		fl("- Passport: Portuguese, renewed April 2026, expires 2036-04", fct("when does my passport expire?")),
		fl("- Frequent flyer: KLM Flying Blue, silver"),
		fl("- Seat: aisle, always", fct("window or aisle seat?")),
		fl("- Visited: Lisbon 2025, Kyoto 2026, Scotland 2026"),
		fl("- Wishlist: Patagonia, Hokkaido in winter", fct("where do I want to travel next?")),
		fl("- Porto flights: KLM or Transavia from Schiphol, about 2h30"),
	}},
	{"home", "Home", "flat, landlord, bike, car", []factLine{
		fl("- Address: Javaplein, Amsterdam Oost, 3rd floor"),
		fl("- Landlord: Stadgenoot housing association", fct("who is our landlord?")),
		fl("- Bike: Gazelle, stolen September 2026, replaced with a Cortina"),
		fl("- Car: 2014 VW Polo, shared with Sam", fct("what car do we have?")),
		fl("- Bins: Wednesday morning; paper every other Monday", fct("when are the bins collected?")),
		fl("- Plants: tomatoes, basil, a monstera cutting from Grace's"),
	}},
	{"preferences", "Preferences", "food, coffee, music, hours", []factLine{
		fl("- Diet: pescatarian, no red meat", fct("do I eat meat?")),
		fl("- Coffee: flat white with oat milk", fct("how do I take my coffee?")),
		fl("- Hates: cilantro, open-plan offices"),
		fl("- Favourite restaurant: Wilde Zwijnen"),
		fl("- Music: Nils Frahm, Satie, Portuguese fado"),
		fl("- Working hours: 9:30–17:30, no meetings before 10"),
	}},
}

// echoes are later mentions of a scenario (by its title) in other entries'
// bodies: follow-ups, retros, status notes, carrying several of its words.
var echoes = map[string][]string{
	"Connection pool exhausted during the Atlas backfill": {"- Joon asked about the Postgres connection pool being exhausted during the backfill last year", "- Joon asked why the Postgres pool is capped at 20", "- Pool exhausted on the reporting replica too; Postgres max_connections raised", "- Connection pool sizes documented for every service in the Postgres guide"},
	"Harbor runners autoscale on queue depth":             {"- Harbor runners scale on queue depth now, but the queue was empty all week", "- Queue depth graph for CI added to the dashboard", "- Queue depth on the Kafka topic looks fine", "- Runners idle most of the weekend; the queue depth autoscaler works"},
	"Memory leak in the Nimbus purge handler":             {"- Reviewed Will's purge handler change; no memory leak this time", "- Purge requests now time out after 5 s", "- Memory profile of Beacon looks clean, no leak", "- Purge API usage doubled; support loves it"},
	"Design doc: Beacon delivery guarantees":              {"- Mark wants the Beacon delivery guarantees design doc updated for SMS", "- Mark still unsure about the delivery guarantees for SMS", "- Delivery guarantees for email are weaker; Beacon retries three times", "- Beacon design review: delivery, ordering, dedup"},
	"Nimbus cache hit ratio dropped":                      {"- Nimbus cache hit ratio dropped briefly during a purge, back in minutes", "- Cache hit ratio dipped again during a purge", "- Hit ratio for the PDF cache is 97%", "- Cache dropped after the config reload; warm again in 10 minutes"},
	"CI cache volume full":                                {"- CI cache volume almost full again; the prune job had stopped", "- Cache volume alert threshold moved to 85%", "- CI volume graphs added; cache disk at 40%", "- Full rebuild of the CI cache after the Go upgrade"},
	"Slow customer search":                                {"- Support says customer search is slow again on Mondays; the index is fine", "- Slow search on the admin invoices page, same fix?", "- Search for a customer by email is slow on the old admin", "- Slow customer export; batch it at night"},
	"Webhook signature verification":                      {"- Webhook signature verification rejected 12 forged calls this month", "- Verification of the webhook payloads documented", "- Signature checks added to the Slack webhook too", "- Webhook verification failing for one partner: clock skew"},
	"Retry storm against the payment provider":            {"- Another provider outage today; no retry storm after it thanks to the backoff", "- Retry jitter settings reviewed", "- Outage at the provider for 40 minutes; retries held", "- Storm of alerts during the outage; tuned them after"},
	"Duplicate Slack notifications from Beacon":           {"- Someone reported duplicate Slack notifications again; it was their own alert rule", "- Duplicate email notifications reported, a different bug", "- Slack notifications for deploys go to #releases now", "- Duplicate alerts in Slack from two monitors; removed one"},
	"Currency conversion mismatch":                        {"- The ledger export shows the currency conversion rate per line now, so no mismatch", "- Conversion rates now in the ledger export", "- Conversion rate for the trial-to-paid funnel is 11%", "- Currency mismatch on one invoice: a manual fix"},
	"PDF rendering timeouts":                              {"- PDF rendering timeouts on one huge credit note; pagination didn't cover those", "- Timeouts on the invoice API after the deploy, unrelated", "- Rendering of invoice PDFs moved to a queue", "- Timeouts on the provider API during the outage"},
	"Audit log retention":                                 {"- Audit log retention in cold storage costs €40 a month", "- Retention policy for Slack messages: 90 days", "- Log retention for Nimbus cut to 14 days", "- Audit of the Slack app permissions done"},
	"Rate limit errors from the OpenAI API":               {"- No OpenAI rate limit errors since the queue went in", "- Raised our OpenAI rate limit tier", "- Rate limit on the public API raised for one customer", "- OpenAI errors during their outage; Scribe showed a friendly message"},
	"Database migration lock on deploy":                   {"- New rule: every migration reviewed for locks before the deploy, and none during peak", "- Lock timeout of 5 s for migrations", "- Deploy of Atlas blocked by a migration review", "- Lock contention on the invoices table at month end"},
	"Backup restore drill":                                {"- Next backup restore drill planned for December", "- Backup of the Nimbus config added", "- Restore of the staging database from backup for the demo", "- Fire drill at the office, everyone out for 20 minutes"},
	"Slow query on the invoice list":                      {"- The invoice list query is still slow for our biggest customer", "- Query plan for the invoice export reviewed", "- Invoice list page redesign from the design team", "- Slow list rendering in the admin UI; pagination added"},
	"Upstairs renovation":                                 {"- Drilling upstairs again every morning this week; the renovation should end Friday", "- The housing association replied about the renovation", "- Renovation of the bathroom downstairs started", "- Upstairs neighbours apologised with cake"},
	"Allergy season":                                      {"- Hay fever back with the allergy season; took a cetirizine", "- Allergy tablets in my bag", "- Fever again, stayed home", "- Allergy pills running out"},
	"Heatwave week":                                       {"- Worked from the library again, the heatwave is back", "- Another heatwave warning for next week", "- Library card renewed", "- Heatwave over, finally slept"},
	"Dad got hearing aids":                                {"- Dad wore his hearing aids at dinner for once; mom's hearing test is booked too", "- Hearing test for mom booked too", "- Hearing test for dad's left ear booked", "- Dad's new hearing aids keep whistling, mom says"},
	"Bike stolen":                                         {"- Oskar's bike was stolen at the station too, the same week", "- Police report number sent to the insurance", "- A colleague's phone was stolen at the station", "- Bike shop says locks don't stop thieves in Oost"},
	"Kubernetes upgrade to 1.31":                          {"- Kubernetes 1.32 upgrade planned; check the Harbor jobs first, the last upgrade broke two", "- Harbor jobs need a new security context after the upgrade", "- Harbor jobs failing after the runner image upgrade", "- Kubernetes node pool upgrade broke nothing this time"},
	"Onboarding docs rewrite":                             {"- Will said the onboarding docs were great; a rewrite of the Nimbus docs next", "- Onboarding for the new intern; docs updated again", "- Docs rewrite for Atlas phase 2", "- Onboarding buddy for the intern: me"},
	"Missing invoices for annual plans":                   {"- Finance found two more missing invoices on annual plans, from before the fix", "- Finance asked for a list of annual renewals", "- Annual plans now 12% of revenue", "- Missing invoices report for finance every month"},
	"Flaky end-to-end tests in Beacon":                    {"- Beacon end-to-end tests green for a week; no flaky runs", "- Flaky tests in Atlas now, a different cause", "- Flaky tests in Beacon's template renderer; fixed a race", "- End-to-end tests for Nimbus added to the release checklist"},
	"Invoice totals off by one cent":                      {"- Finance happy with the invoice totals since January"},
	"Incident: double charges after the Atlas cutover":    {"- Refunds for the double charges all settled", "- A customer still angry about being charged twice in March"},
	"TLS certificate expired on staging":                  {"- Staging certificate renewed on its own this time"},
	"Dad's Parkinson's diagnosis":                         {"- Six months since dad's diagnosis; mom coping better"},
	"Bought a digital piano":                              {"- The digital piano needs a new sustain pedal"},
	"Knee pain after running":                             {"- No knee pain on the 10 km run"},
	"Promotion packet submitted":                          {"- Promotion packet feedback from the committee: more on mentoring"},
}

// also are the other places that answer a question (by its query): an
// entry by its title ("title|..."), an entry by the start of its summary
// ("summary|...") or a fact line by its path and start ("fact|path|...").
var also = map[string][]string{
	"when is Hana's baby due?":     {"title|Hana's baby shower"},
	"what's my half marathon PB?":  {"title|Amsterdam half marathon"},
	"what does Sam do for work?":   {"title|Sam's new job at OLVG"},
	"what medication is dad on?":   {"title|Dad's Parkinson's diagnosis"},
	"what Go version are we on?":   {"title|Upgraded to Go 1.26"},
	"where do I live?":             {"title|Moving day", "title|Signed the lease in Oost"},
	"who teaches me piano?":        {"title|Bought a digital piano"},
	"who owns Nimbus?":             {"fact|facts/work.md|- Mark Jansen:"},
	"when did Bill get married":    {"fact|facts/friends.md|- Bill Turner:"},
	"when did Will join the team":  {"fact|facts/work.md|- Will Chen:"},
	"Dr. Lindqvist":                {"fact|facts/health.md|- Therapist:"},
	"mom's 65th":                   {"summary|Mom's 65th weekend"},
	"when did we move to Oost":     {"title|Signed the lease in Oost"},
	"Atlas cutover":                {"fact|facts/projects.md|- Atlas:"},
	"when was my father diagnosed": {"fact|facts/family.md|- Father:"},
	"dad parkinson's diagnosis":    {"fact|facts/family.md|- Father:"},
}
