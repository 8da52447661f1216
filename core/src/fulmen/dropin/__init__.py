"""Lightning drop-in: ``fulmen run`` serves Lightning's module names from fulmen in one process
and the processes it starts (:mod:`fulmen.dropin.finder`, :mod:`fulmen.dropin.names`);
``fulmen migrate`` rewrites a script's imports and Lightning 1.x idioms for good
(:mod:`fulmen.dropin.migrate`)."""
