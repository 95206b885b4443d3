# Salt state: install keel, ship the node's desired state (validated with
# keel vet before it replaces the old one), install the udev rules, and run
# the units. Pillar: keel:deb (a salt:// path), keel:desired (a salt:// path).
keel-package:
  pkg.installed:
    - sources:
      - keel: {{ pillar['keel']['deb'] }}

keel-desired-state:
  file.managed:
    - name: /etc/keel/keel.cue
    - source: {{ pillar['keel']['desired'] }}
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: keel vet
    - require:
      - pkg: keel-package

keel-udev-rules:
  cmd.run:
    - name: keel udev-rules --write
    - unless: keel udev-rules --check
    - onchanges:
      - file: keel-desired-state

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
