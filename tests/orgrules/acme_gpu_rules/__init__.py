"""A sample organization rule package, as a team would publish it: installed next to gpupolicy, it adds its
rules through the `gpupolicy.rules` entry point (`acme = acme_gpu_rules`). tests/test_org_rules.py installs
it."""
