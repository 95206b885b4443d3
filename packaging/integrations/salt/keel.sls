# Salt state: install keel, ship the node's desired state and the agent mode
# (each vetted together with the rest of /etc/keel before it replaces the old
# file), install the udev rules, and run the units.
#
# Pillar: keel:deb (a salt:// path), keel:desired (a salt:// path), keel:mode.
#
# keel:mode is "audit" unless the pillar sets it: keel run and keel activate
# then probe, report and alert but change nothing, and the state writes no
# udev rule. Turn convergence on per minion once
# `keel plan` on it shows only what you want done: set keel:mode: converge in
# its pillar and apply the state; keel.service reloads (SIGHUP) and converges.
# Set agent.mode only here, not in keel:desired: two values for it are a
# conflict that keel vet refuses.
keel-package:
  pkg.installed:
    - sources:
      - keel: {{ pillar['keel']['deb'] }}

keel-agent-mode:
  file.managed:
    - name: /etc/keel/agent.cue
    - contents: 'agent: mode: "{{ salt['pillar.get']('keel:mode', 'audit') }}"'
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: /usr/lib/keel/vet-dropin /etc/keel/agent.cue
    - require:
      - pkg: keel-package

keel-desired-state:
  file.managed:
    - name: /etc/keel/keel.cue
    - source: {{ pillar['keel']['desired'] }}
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: /usr/lib/keel/vet-dropin /etc/keel/keel.cue
    - require:
      - pkg: keel-package
      - file: keel-agent-mode

{# Only when converging: audit mode changes nothing on the host, keel's
   udev rules included (their --write would only say so). #}
{% if salt['pillar.get']('keel:mode', 'audit') == 'converge' %}
keel-udev-rules:
  cmd.run:
    - name: keel udev-rules --write
    - unless: keel udev-rules --check
    - onchanges:
      - file: keel-desired-state
      - file: keel-agent-mode
{% endif %}

keel-activate:
  service.enabled:
    - name: keel-activate.service
    - require:
      - file: keel-desired-state

keel-daemon:
  service.running:
    - name: keel.service
    - enable: true
    - reload: true
    - watch:
      - file: keel-desired-state
      - file: keel-agent-mode
